import http from 'node:http';
import { randomInt, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ServiceClient, type ClientResponse } from '../shared/client/signing';
import { countOf, Replays, SignedPoster, type Identity, type SentPost } from './chaos-replays';
import { createMerchantWithKey, operatorApi, type OperatorApi } from './lib/demo';
import { sleep } from './lib/processes';

/**
 * The merchant's side of the chaos drills (the single-machine one and the one across the
 * topology): the webhook endpoint, the operator API calls that set a merchant up, and the steady
 * load of payments, refunds and payouts sent as a careful client would, some of them replayed.
 */

export const say = (line: string) => process.stdout.write(`chaos | ${line}\n`);

/** The operator token and the sandbox provider's key of the service a drill starts. */
export const ADMIN_TOKEN = 'chaos-admin-token-0123456789';
export const SANDBOX_PROVIDER_KEY = 'chaos-sandbox-provider-key';

/** The sandbox provider of a drill's service at `url`, for the provider check (assessOutcome). */
export const sandboxProvider = (url: string) => ({ url, apiKey: SANDBOX_PROVIDER_KEY });

/** What a drill sets in its service's environment: the operator token and provider key above, no rate limit, the access log. */
export const DRILL_SERVICE_ENV = {
  SANDBOX_PROVIDER_API_KEY: SANDBOX_PROVIDER_KEY,
  ADMIN_API_TOKEN: ADMIN_TOKEN,
  RATE_LIMIT_PER_MINUTE: '1000000',
  // info: the access log (one line per request) is part of what the leak scan reads
  LOG_LEVEL: 'info',
};

/** Spellings of one number, looked up so that a number left whole in the access log is found. */
const PHONE_SPELLINGS = ['0812345678', '%2B243%2081%20234%205678', '243-81-234-5678', '(0)81.234.56.78'];

export type Kind = 'payments' | 'refunds' | 'payouts';
export const KINDS: Kind[] = ['payments', 'refunds', 'payouts'];
export interface Tally {
  requested: number;
  refused: number;
  /** why, by status and error code */
  why: Map<string, number>;
}
export const answerCode = (res: ClientResponse) => `${res.status} ${res.body?.error?.code ?? ''}`.trim();
const countIn = (m: Map<string, number>, what: string) => m.set(what, (m.get(what) ?? 0) + 1);

// ---------------------------------------------------------------- the webhook endpoint and the drill's merchant

/** The merchant's webhook endpoint on 127.0.0.1:port; `received` counts the deliveries of each event id. */
export function startReceiver(port: number): Promise<{ server: http.Server; received: Map<string, number> }> {
  const received = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        countIn(received, JSON.parse(Buffer.concat(chunks).toString()).id as string);
      } catch {
        /* not an event */
      }
      res.writeHead(200).end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ server, received }));
  });
}

export interface DrillMerchant {
  id: string;
  credential: { api_key: string; secret: string; webhook_secret: string };
  /** signed requests to the service's merchant API */
  client: ServiceClient;
}

/** A merchant of the drill's own with fees and a full-scope credential of `environment`, and a client on it. */
export async function drillMerchant(
  admin: OperatorApi,
  serviceUrl: string,
  name: string,
  environment: 'test' | 'live',
): Promise<DrillMerchant> {
  const { id, credential } = await createMerchantWithKey(
    admin,
    { name, fees: { USD: { percent_bps: 150, fixed: 5 }, CDF: { percent_bps: 150, fixed: 0 } } },
    { environment, scope: 'full' },
  );
  return {
    id,
    credential,
    client: new ServiceClient({ baseUrl: serviceUrl, apiKey: credential.api_key, secret: credential.secret }),
  };
}

/** drillMerchant with a test credential and a webhook endpoint for every payment, refund and payout event. */
export async function createDrillMerchant(
  admin: OperatorApi,
  serviceUrl: string,
  webhookUrl: string,
): Promise<DrillMerchant> {
  const merchant = await drillMerchant(admin, serviceUrl, `Chaos ${new Date().toISOString()}`, 'test');
  await admin('POST', '/admin/webhooks', {
    merchant_id: merchant.id,
    url: webhookUrl,
    events: ['payment.*', 'refund.*', 'payout.*'],
    environment: 'test',
  });
  return merchant;
}

/** The merchant's side of a drill, once its service answers. */
export interface MerchantSide {
  /** the webhook endpoint, and the deliveries of each event id */
  receiver: http.Server;
  received: Map<string, number>;
  merchant: DrillMerchant;
  /** what the log scan looks for: the credential's secrets and the operator token */
  secrets: string[];
  poster: SignedPoster;
  load: MerchantLoad;
  /** the phone-number lookups' answers (lookUpPhoneSpellings) */
  lookups: Map<string, number>;
}

/**
 * The drill's webhook endpoint on `receiverPort` (startReceiver) and merchant, made through the
 * operator API at `adminUrl` (createDrillMerchant, its webhooks to that endpoint; or `create`'s own), its signed poster and load (`requests`' unless
 * the sandbox's), and the phone-number lookups.
 */
export async function startMerchantSide(o: {
  adminUrl: string;
  serviceUrl: string;
  receiverPort: number;
  db: Knex;
  create?: (admin: OperatorApi, serviceUrl: string) => Promise<DrillMerchant>;
  requests?: LoadRequests;
}): Promise<MerchantSide> {
  const { server: receiver, received } = await startReceiver(o.receiverPort);
  const admin = operatorApi(o.adminUrl, ADMIN_TOKEN);
  const merchant = o.create
    ? await o.create(admin, o.serviceUrl)
    : await createDrillMerchant(admin, o.serviceUrl, `http://127.0.0.1:${o.receiverPort}/hook`);
  const poster = new SignedPoster(merchant.client);
  const load = new MerchantLoad(poster, o.db, merchant.id, o.requests);
  const { api_key, secret, webhook_secret } = merchant.credential;
  return {
    receiver,
    received,
    merchant,
    secrets: [api_key, secret, webhook_secret, ADMIN_TOKEN],
    poster,
    load,
    lookups: await lookUpPhoneSpellings(merchant.client),
  };
}

/** Looks one phone number up in several spellings (the log scan then looks for it written whole); the answers by status and code. */
export async function lookUpPhoneSpellings(client: ServiceClient): Promise<Map<string, number>> {
  const lookups = new Map<string, number>();
  for (const spelling of PHONE_SPELLINGS)
    countIn(lookups, await client.get(`/v1/phone-numbers/${spelling}`).then(answerCode, () => 'no answer'));
  return lookups;
}

// ---------------------------------------------------------------- the requests

/** One merchant POST: what it creates is found again by `identity`. */
export interface MerchantPost {
  kind: Kind;
  path: string;
  body: unknown;
  identity: Identity;
}

const PHONES = [
  '243990000001',
  '243990000001',
  '243990000001',
  '243990000001',
  '243990000002',
  '243990000003',
  '243990000005',
  '243990000005',
  '243990000004',
  '243811234567',
];
/** Of the accepted requests of each kind, one in this many is replayed. */
const REPLAY_ONE_IN: Record<Kind, number> = { payments: 10, refunds: 1, payouts: 5 };
/** How long a client keeps asking (a merchant's checkout would give up after about that). */
const RETRY_FOR_MS = 120_000;

/** A POST of a payment or payout, found again by its reference (`<prefix>-<uuid>`, added to `body`). */
export function referencedPost(kind: 'payments' | 'payouts', body: object, prefix = 'chaos'): MerchantPost {
  const reference = `${prefix}-${randomUUID()}`;
  return {
    kind,
    path: `/v1/${kind}`,
    body: { ...body, reference },
    identity: { table: kind, column: 'reference', value: reference },
  };
}
export const paymentPost = (): MerchantPost =>
  referencedPost('payments', {
    amount: randomInt(1_000, 50_000),
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: PHONES[randomInt(PHONES.length)],
  });
export const payoutPost = (): MerchantPost =>
  referencedPost('payouts', {
    amount: randomInt(100, 1_000),
    currency: 'USD',
    operator: 'airtel',
    phone: randomInt(5) === 0 ? '243990000005' : '243990000001',
  });
/** A refund of `amount` (none: the whole payment), found again by its reason. */
export function refundPost(paymentId: string, amount?: number): MerchantPost {
  const reason = `chaos-${randomUUID()}`;
  return {
    kind: 'refunds',
    path: `/v1/payments/${paymentId}/refund`,
    body: { ...(amount === undefined ? {} : { amount }), reason },
    identity: { table: 'refunds', column: 'reason', value: reason },
  };
}

/** A succeeded payment the load may refund. */
export interface RefundablePayment {
  id: string;
  amount_charged: number;
  operator: string;
  phone: string;
}

/** What the load sends: the sandbox drill's requests (SANDBOX_REQUESTS) unless told otherwise (chaos-live.ts has the live connectors'). */
export interface LoadRequests {
  payment(): MerchantPost;
  payout(): MerchantPost;
  /** the refund asked of a succeeded payment, or none */
  refund(payment: RefundablePayment): MerchantPost | undefined;
}

/** A refund of half the amount for a third of the succeeded payments. */
export const SANDBOX_REQUESTS: LoadRequests = {
  payment: paymentPost,
  payout: payoutPost,
  refund: (p) => (randomInt(3) === 0 ? refundPost(p.id, Math.max(1, Math.floor(p.amount_charged / 2))) : undefined),
};

type Probe = () => Promise<ClientResponse>;

/**
 * The drill's load, for one merchant: what it requested and what was refused (by kind), and the
 * replays of some accepted requests.
 */
export class MerchantLoad {
  readonly tally: Record<Kind, Tally> = {
    payments: { requested: 0, refused: 0, why: new Map() },
    refunds: { requested: 0, refused: 0, why: new Map() },
    payouts: { requested: 0, refused: 0, why: new Map() },
  };
  readonly replays: Replays;
  private readonly accepted: Record<Kind, number> = { payments: 0, refunds: 0, payouts: 0 };
  private readonly inflight = new Set<Promise<void>>();
  /** succeeded payments already considered for a refund */
  private readonly refunded = new Set<string>();

  constructor(
    readonly poster: SignedPoster,
    private readonly db: Knex,
    private readonly merchantId: string,
    private readonly requests: LoadRequests = SANDBOX_REQUESTS,
  ) {
    this.replays = new Replays(poster, db);
  }

  /**
   * Steady load while `keepGoing()`: payments at `rate` per second, a payout a second (from 20 s
   * on), the refunds `requests` asks of the succeeded payments (SANDBOX_REQUESTS: half the amount for a third). Resolves when the
   * loops end; settled() waits for the requests still being answered or retried.
   */
  async run(rate: number, keepGoing: () => boolean): Promise<void> {
    await Promise.all([
      this.every(1000 / rate, keepGoing, () => this.load(this.requests.payment())),
      sleep(20_000).then(() => this.every(1000, keepGoing, () => this.load(this.requests.payout()))),
      this.refundSome(keepGoing),
    ]);
  }

  settled(): Promise<unknown> {
    return Promise.all([...this.inflight]);
  }

  /** Succeeded payments of the merchant (the partition's and the cut-off's probes refund them). */
  refundablePayments(limit: number): Promise<string[]> {
    return this.db('payments').where({ merchant_id: this.merchantId, status: 'succeeded' }).limit(limit).pluck('id');
  }

  /**
   * Probes for a fault during which every request is timed (chaos-partition.ts): a payment, the
   * balance and a refund of 1 of one of `refundable`, each sent once through `client`, `poster`;
   * `during` names the fault in the refusals tallied.
   */
  probes(client: ServiceClient, poster: SignedPoster, refundable: string[], during: string): Record<string, Probe> {
    let i = 0;
    return {
      'POST /v1/payments': () => this.sendOnce(this.requests.payment(), poster, during),
      'GET /v1/balance': () => client.get('/v1/balance'),
      ...(refundable.length
        ? { 'POST refund': () => this.sendOnce(refundPost(refundable[i++ % refundable.length], 1), poster, during) }
        : {}),
    };
  }

  private async every(intervalMs: number, keepGoing: () => boolean, act: () => void): Promise<void> {
    for (let t = Date.now(); keepGoing(); t += intervalMs) {
      await sleep(Math.max(0, t - Date.now()));
      act();
    }
  }

  private async refundSome(keepGoing: () => boolean): Promise<void> {
    while (keepGoing()) {
      await sleep(2000);
      const done: RefundablePayment[] = await this.db('payments')
        .where({ merchant_id: this.merchantId, status: 'succeeded' })
        .whereNotIn('id', [...this.refunded])
        .limit(50)
        .select('id', 'amount_charged', 'operator', 'phone')
        .catch(() => []);
      for (const p of done) {
        this.refunded.add(p.id);
        const post = this.requests.refund(p);
        if (post) this.load(post);
      }
    }
  }

  /** Sends `post` as a careful client; one accepted request in REPLAY_ONE_IN is then replayed. */
  private load(post: MerchantPost): void {
    const p = this.send(post).then((sent) => {
      if (sent && ++this.accepted[post.kind] % REPLAY_ONE_IN[post.kind] === 0) return this.replays.replay(sent);
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private refuse(kind: Kind, why: string): void {
    this.tally[kind].refused++;
    countIn(this.tally[kind].why, why);
  }

  /**
   * Sends one merchant request as a careful client would: on a network error or a 5xx it asks
   * again with the same Idempotency-Key (and body), after Retry-After when given, for up to
   * RETRY_FOR_MS, unless an earlier try already created its object. The accepted request as sent.
   */
  private async send(post: MerchantPost): Promise<SentPost | undefined> {
    const { kind } = post;
    this.tally[kind].requested++;
    const key = randomUUID();
    const raw = JSON.stringify(post.body);
    const exists = async () => (await countOf(this.db, post.identity).catch(() => 0)) > 0;
    let last = '';
    const giveUp = Date.now() + RETRY_FOR_MS;
    for (let attempt = 1; Date.now() < giveUp; attempt++) {
      let wait = Math.min(1000 * attempt, 5000);
      const timestamp = Math.floor(Date.now() / 1000);
      try {
        const answer = await this.poster.post(post.path, raw, key, timestamp);
        if (answer.status === 201 || answer.status === 200)
          return { path: post.path, raw, timestamp, key, identity: post.identity, answer };
        last = answerCode(answer);
        if (answer.status < 500 && answer.status !== 409) return void this.refuse(kind, last);
        const after = Number(answer.headers.get('retry-after'));
        if (after > 0) wait = after * 1000;
      } catch (err) {
        // connection reset or refused: the request may or may not have acted
        last = (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      }
      await sleep(wait);
      if (await exists()) return undefined;
    }
    if (!(await exists())) this.refuse(kind, `gave up after ${RETRY_FOR_MS / 1000} s: ${last}`);
    return undefined;
  }

  /** One try, timed by the fault's check rather than retried; a refusal is tallied like the load's. */
  private async sendOnce(post: MerchantPost, poster: SignedPoster, during: string): Promise<ClientResponse> {
    this.tally[post.kind].requested++;
    try {
      const answer = await poster.post(post.path, JSON.stringify(post.body), randomUUID());
      if (answer.status >= 300) this.refuse(post.kind, `during ${during}: ${answerCode(answer)}`);
      return answer;
    } catch (err) {
      this.refuse(post.kind, `during ${during}: no answer`);
      throw err;
    }
  }
}
