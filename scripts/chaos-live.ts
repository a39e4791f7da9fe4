import { randomInt } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { checkLedger } from '../shared/ledger/check';
import { decimalToMinor } from '../shared/providers/amounts';
import {
  startAirtelSimulator,
  type AirtelSimulator,
  type SimTransaction as AirtelTransaction,
} from './simulators/airtel/simulator';
import { toAirtelId } from '../shared/providers/airtel/wire';
import {
  startPawapaySimulator,
  type PawapaySimulator,
  type SimTransaction as PawapayTransaction,
} from './simulators/pawapay/simulator';
import type { Currency } from '../shared/vocabulary';
import {
  KINDS,
  referencedPost,
  refundPost,
  type DrillMerchant,
  type Kind,
  type LoadRequests,
  type MerchantPost,
  drillMerchant,
  type Tally,
} from './chaos-merchant';
import { takenPorts } from './chaos-ports';
import { CardDrill } from './chaos-cards';
import { CARDS } from './lib/cards';
import { startMpgsSimulator } from './simulators/mpgs/server';
import type { OperatorApi } from './lib/demo';
import { counted, ledgerCheck, objectRow, replayCheck, type Check, type Outcome } from './chaos-report';
import type { ReplayTally } from './chaos-replays';

/**
 * `npm run chaos -- --live-connectors --duration 120 --base-port 5700`: the single-machine drill
 * (chaos.ts: kills, Redis FLUSHDB and restart, Postgres cut and partition, signed replays) with
 * LIVE keys routed through the connectors' simulators, which the drill runs in its own process
 * (so no kill reaches them: they stand for the providers): vodacom and orange to pawaPay
 * (scripts/simulators/pawapay/simulator.ts, on --base-port + 20), airtel to Airtel
 * (scripts/simulators/airtel/simulator.ts, on --base-port + 21). The service gets the settings of
 * `npm run demo:live` (LIVE_VODACOM=pawapay, LIVE_ORANGE=pawapay, LIVE_AIRTEL=airtel,
 * PROVIDER_WINDOW_MS 2000 and ASK_INTERVAL_MS 500: Airtel refunds and payouts never call back).
 *
 * The merchant has a live key and no webhook endpoint (live endpoints must be https): its events
 * are counted in the database instead. The load uses the simulators' test numbers (their READMEs):
 * mostly success, every documented failure, and the scenarios that make duplicate, late and
 * out-of-order callbacks (pawaPay …202 twice, …203 stale after final, …205 answered after its
 * callback, …206 no callback until asked, …201 IN_RECONCILIATION; Airtel 970000030 twice,
 * 970000031 before the answer, 970000020-22 no callback until asked), 500s that did or did not
 * create the transaction, slow answers and an Airtel token expiring mid-run. Refunds: half of a
 * pawaPay payment, the whole of an Airtel one (Airtel refunds only whole payments).
 *
 * Its checks, beside the objects table and the ledger and replays rows of chaos.ts:
 *   events (database)    every final object has its final event, once
 *   agreement: pawapay   each operation's final state equals the simulator's record (COMPLETED ↔
 *                        succeeded, FAILED or never taken ↔ failed), with the same amount; one
 *                        initiation per id, or idempotent repeats (DUPLICATE_IGNORED) only; no
 *                        transaction at the simulator that is not one of ours
 *   agreement: airtel    the same (TS ↔ succeeded, TF/TE or never taken ↔ failed/cancelled;
 *                        repeats are refused by id); a refund succeeded ↔ its collection refunded
 * Cards (scripts/chaos-cards.ts): LIVE_CARD=mpgs to the Mastercard Gateway simulator
 * (scripts/simulators/mpgs, on --base-port + 22); a second live merchant pays by card through the
 * checkout while card-charge is killed during PAY, PAYs fail with a 5xx after they were made, and
 * notifications are duplicated, late and lost; rows `cards: charged once`, `cards: ledger` and
 * `cards: faults`.
 * The simulators' own log (every request and callback) is $TMPDIR/chaos-<p>-simulators.log.
 */

/** The simulators' ports: --base-port + these (chaos.ts uses p … p+7). */
export const LIVE_PORT_OFFSETS = { pawapay: 20, airtel: 21, mpgs: 22 } as const;
const MPGS_MERCHANT = 'TESTCHAOSLIVE01';
const MPGS_PASSWORD = 'chaos-live-mpgs-password-7c2e';
const MPGS_NOTIFICATION_SECRET = 'chaos-live-mpgs-notification-4b9a';

const PAWAPAY_TOKEN = 'chaos-live-pawapay-token-5f0c1e';
const AIRTEL_CLIENT_ID = 'chaos-live-airtel-client';
const AIRTEL_CLIENT_SECRET = 'chaos-live-airtel-secret-9a7d';
const AIRTEL_HASH_SECRET = 'chaos-live-airtel-hash-31b4';
const AIRTEL_PIN = '7315';

export interface LiveConnectors {
  /** the service's settings that route live operators to the simulators */
  env: Record<string, string>;
  /** what the load sends */
  requests: LoadRequests;
  /** every credential the simulators hold, for the log leak scan */
  secrets: string[];
  /** for the headline */
  describe: string;
  /** live cards through the Mastercard Gateway simulator (scripts/chaos-cards.ts) */
  cards: CardDrill;
  createMerchant(admin: OperatorApi, serviceUrl: string): Promise<DrillMerchant>;
  assess(
    db: Knex,
    merchantId: string,
    load: { tally: Record<Kind, Tally>; replays: { tally: ReplayTally } },
  ): Promise<Outcome>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------- the load

const pick = <T>(xs: readonly T[]): T => xs[randomInt(xs.length)];
/** pawaPay numbers end in the test tail; the prefix is the operator's (Vodacom 81, Orange 89). */
const pawapayPhone = (operator: 'vodacom' | 'orange', tail: string) =>
  `243${operator === 'vodacom' ? '81' : '89'}0000${tail}`;
/** Airtel's simulator numbers are national (970000001…); ours are 243 + those. */
const airtelPhone = (national: string) => `243${national}`;

/** Deposit tails (shared/providers/pawapay/README.md): success weighted, each failure, every scenario but …129 (stuck forever). */
const PAWAPAY_PAYMENT_TAILS = [
  ...Array(8).fill('789'),
  '019',
  '029',
  '039',
  '049',
  '069',
  '089',
  '119',
  '201',
  '202',
  '202',
  '203',
  '203',
  '204',
  '205',
  '206',
  '207',
];
/** Payout tails: success weighted, both payout failures, the scenarios. */
const PAWAPAY_PAYOUT_TAILS = [...Array(6).fill('789'), '089', '119', '201', '202', '203', '204', '206', '207'];
/** Airtel numbers (shared/providers/airtel/README.md): success weighted, each failure, every scenario. */
const AIRTEL_PAYMENT_NUMBERS = [
  ...Array(8).fill('970000001'),
  '970000002',
  '970000003',
  '970000004',
  '970000005',
  '970000006',
  '970000007',
  '970000008',
  '970000009',
  '970000010',
  '970000011',
  '970000020',
  '970000021',
  '970000022',
  '970000030',
  '970000030',
  '970000031',
  '970000031',
  '970000040',
  '970000041',
  '970000042',
  '970000043',
];
const AIRTEL_PAYOUT_NUMBERS = [
  ...Array(6).fill('970000001'),
  '970000002',
  '970000007',
  '970000009',
  '970000020',
  '970000021',
  '970000030',
  '970000040',
  '970000042',
  '970000043',
];

const OPERATORS = ['vodacom', 'vodacom', 'orange', 'airtel', 'airtel'] as const;

function livePayment(): MerchantPost {
  const operator = pick(OPERATORS);
  const phone =
    operator === 'airtel'
      ? airtelPhone(pick(AIRTEL_PAYMENT_NUMBERS))
      : pawapayPhone(operator, pick(PAWAPAY_PAYMENT_TAILS));
  const body = { amount: randomInt(1_000, 50_000), currency: 'USD', method: 'mobile_money', operator, phone };
  return referencedPost('payments', { ...body, description: 'Chaos live drill' }, 'chaos-live');
}

function livePayout(): MerchantPost {
  const operator = pick(OPERATORS);
  const phone =
    operator === 'airtel'
      ? airtelPhone(pick(AIRTEL_PAYOUT_NUMBERS))
      : pawapayPhone(operator, pick(PAWAPAY_PAYOUT_TAILS));
  // pawaPay's smallest USD payout is 1.00 (Vodacom)
  return referencedPost('payouts', { amount: randomInt(100, 1_000), currency: 'USD', operator, phone }, 'chaos-live');
}

export const LIVE_REQUESTS: LoadRequests = {
  payment: livePayment,
  payout: livePayout,
  // a refund for half of the succeeded payments: the whole of an Airtel one (Airtel refunds only
  // whole payments), half of a pawaPay one
  refund: (p) => {
    if (randomInt(2) !== 0) return undefined;
    if (p.operator === 'airtel') return refundPost(p.id);
    return refundPost(p.id, Math.max(100, Math.floor(p.amount_charged / 2)));
  },
};

// ---------------------------------------------------------------- the simulators and the service's settings

export async function startLiveConnectors(base: number, webPort: number, db: Knex): Promise<LiveConnectors> {
  const ports = {
    pawapay: base + LIVE_PORT_OFFSETS.pawapay,
    airtel: base + LIVE_PORT_OFFSETS.airtel,
    mpgs: base + LIVE_PORT_OFFSETS.mpgs,
  };
  const taken = await takenPorts({
    'pawaPay simulator': ports.pawapay,
    'Airtel simulator': ports.airtel,
    'Mastercard Gateway simulator': ports.mpgs,
  });
  if (taken.length)
    throw new Error(
      `${taken.map(({ role, port }) => `port ${port} (${role})`).join(', ')} taken: choose another --base-port`,
    );
  const simLogFile = path.join(os.tmpdir(), `chaos-${base}-simulators.log`);
  const simLog = createWriteStream(simLogFile);
  const log = (line: string) => void (simLog.writableEnded || simLog.write(`${new Date().toISOString()} ${line}\n`));
  const serviceUrl = `http://127.0.0.1:${webPort}`;
  const pawapay = await startPawapaySimulator({
    port: ports.pawapay,
    token: PAWAPAY_TOKEN,
    callbackUrl: `${serviceUrl}/callbacks/pawapay`,
    // callbacks a second late, so that some cross a kill or the cut
    callbackDelayMs: 1000,
    log,
  });
  const airtel = await startAirtelSimulator({
    port: ports.airtel,
    clientId: AIRTEL_CLIENT_ID,
    clientSecret: AIRTEL_CLIENT_SECRET,
    callbackUrl: `${serviceUrl}/callbacks/airtel`,
    callbackHashSecret: AIRTEL_HASH_SECRET,
    callbackDelayMs: 1000,
    pin: AIRTEL_PIN,
    log: (line) => log(`airtel-sim: ${line}`),
  });
  const mpgs = await startMpgsSimulator({
    port: ports.mpgs,
    merchantId: MPGS_MERCHANT,
    apiPassword: MPGS_PASSWORD,
    notificationSecret: MPGS_NOTIFICATION_SECRET,
    notificationUrl: `${serviceUrl}/callbacks/mpgs`,
    notificationRetryMs: 500,
    // the slow PAY during which card-charge is killed
    slowMs: 3000,
    log: (line) => log(`mpgs-sim: ${line}`),
  });
  const cards = new CardDrill(mpgs, serviceUrl, db);
  return {
    env: {
      LIVE_VODACOM: 'pawapay',
      LIVE_ORANGE: 'pawapay',
      LIVE_AIRTEL: 'airtel',
      PAWAPAY_URL: pawapay.url,
      PAWAPAY_API_TOKEN: PAWAPAY_TOKEN,
      AIRTEL_URL: airtel.url,
      AIRTEL_CLIENT_ID,
      AIRTEL_CLIENT_SECRET,
      AIRTEL_CALLBACK_HASH_SECRET: AIRTEL_HASH_SECRET,
      AIRTEL_DISBURSEMENT_PIN: AIRTEL_PIN,
      AIRTEL_PIN_PUBLIC_KEY: airtel.publicKeyPem,
      LIVE_CARD: 'mpgs',
      MPGS_GATEWAY_URL: mpgs.url,
      MPGS_MERCHANT_ID: MPGS_MERCHANT,
      MPGS_API_PASSWORD: MPGS_PASSWORD,
      MPGS_NOTIFICATION_SECRET,
      MPGS_TIMEOUT_MS: '10000',
      // the drill's card client posts from addresses of its own through one trusted proxy (the checkout's limit is per IP)
      TRUSTED_PROXIES: '1',
      // Airtel calls back for collections only: refunds and payouts are asked about once their window is over
      PROVIDER_WINDOW_MS: '2000',
      ASK_INTERVAL_MS: '500',
    },
    requests: LIVE_REQUESTS,
    secrets: [
      PAWAPAY_TOKEN,
      AIRTEL_CLIENT_SECRET,
      AIRTEL_HASH_SECRET,
      MPGS_PASSWORD,
      MPGS_NOTIFICATION_SECRET,
      CARDS.frictionless,
      CARDS.challenge,
    ],
    describe: `live keys: vodacom and orange through the pawaPay simulator (${pawapay.url}), airtel through the Airtel simulator (${airtel.url}), cards through the Mastercard Gateway simulator (${mpgs.url}); simulators' log ${simLogFile}`,
    cards,
    createMerchant: createLiveMerchant,
    assess: async (db, merchantId, load) => {
      const outcome = await assessLive(db, merchantId, load, pawapay, airtel);
      const c = await cards.assess();
      return {
        ...outcome,
        objectRows: [...outcome.objectRows, c.row],
        checks: [...outcome.checks, ...c.checks],
        lostOrDoubled: outcome.lostOrDoubled + c.lostOrDoubled,
        providerMismatches: [...outcome.providerMismatches, ...c.mismatches],
      };
    },
    close: async () => {
      await Promise.all([pawapay.close(), airtel.close(), mpgs.close()]);
      await new Promise((r) => simLog.end(r));
    },
  };
}

/** A merchant of the drill's own with fees and a full-scope LIVE credential; no webhook endpoint (live endpoints must be https). */
const createLiveMerchant = (admin: OperatorApi, serviceUrl: string): Promise<DrillMerchant> =>
  drillMerchant(admin, serviceUrl, `Chaos live ${new Date().toISOString()}`, 'live');

// ---------------------------------------------------------------- the outcome

/** The connector each operator is routed to. */
const CONNECTOR_OF: Record<string, 'pawapay' | 'airtel'> = { vodacom: 'pawapay', orange: 'pawapay', airtel: 'airtel' };
const SINGULAR: Record<Kind, 'payment' | 'refund' | 'payout'> = {
  payments: 'payment',
  refunds: 'refund',
  payouts: 'payout',
};

type Said = 'succeeded' | 'failed' | 'open';
/** What a final status of ours says happened; 'open' while not final (the lost count covers those). */
function ours(status: string): Said {
  if (status === 'succeeded' || status === 'refunded') return 'succeeded';
  if (status === 'failed' || status === 'cancelled') return 'failed';
  return 'open';
}
const pawapaySaid = (t: PawapayTransaction | undefined): Said | 'never taken' =>
  !t ? 'never taken' : t.status === 'COMPLETED' ? 'succeeded' : t.status === 'FAILED' ? 'failed' : 'open';
const airtelSaid = (t: AirtelTransaction | undefined): Said | 'never taken' =>
  !t ? 'never taken' : t.status === 'TS' ? 'succeeded' : t.status === 'TF' || t.status === 'TE' ? 'failed' : 'open';

export interface Row {
  id: string;
  status: string;
  operator: string;
  provider: string | null;
  amount: string;
  currency: Currency;
  payment_id?: string;
}

/** Agreement of one connector: final operations compared, disagreements, initiations per id. */
class Agreement {
  compared = 0;
  readonly byKind: Record<Kind, number> = { payments: 0, refunds: 0, payouts: 0 };
  readonly disagreements: string[] = [];
  once = 0;
  repeats = 0;
  /** Airtel refunds asked more than once of one collection (no id: a repeat is refused, not ignored) */
  refundRepeats = 0;
  neverTaken = 0;
  constructor(readonly connector: 'pawapay' | 'airtel') {}

  compare(kind: Kind, op: Row, said: Said | 'never taken', detail = ''): void {
    const mine = ours(op.status);
    if (mine === 'open') return;
    this.compared++;
    this.byKind[kind]++;
    if (said === 'never taken') this.neverTaken++;
    const agrees = mine === said || (mine === 'failed' && said === 'never taken');
    if (!agrees) this.disagree(`${op.id} (${op.operator}): service ${op.status}, ${this.connector} ${said}${detail}`);
  }
  initiations(n: number): void {
    if (n === 1) this.once++;
    else if (n > 1) this.repeats++;
  }
  disagree(what: string): void {
    this.disagreements.push(what);
  }
  check(extra: string): Check {
    const kinds = KINDS.map((k) => `${k} ${this.byKind[k]}`).join(', ');
    return {
      name: `agreement: ${this.connector}`,
      ok: this.disagreements.length === 0 && this.compared > 0,
      detail: `${this.compared} final compared (${kinds}; never taken by it ${this.neverTaken}), ${this.disagreements.length} disagree; initiations per id: 1 for ${this.once}, idempotent repeats for ${this.repeats}${this.connector === 'airtel' ? `, refunds asked again ${this.refundRepeats}` : ''}${extra}`,
    };
  }
}

async function assessLive(
  db: Knex,
  merchantId: string,
  load: { tally: Record<Kind, Tally>; replays: { tally: ReplayTally } },
  pawapay: PawapaySimulator,
  airtel: AirtelSimulator,
): Promise<Outcome> {
  const objectRows: string[][] = [];
  let lostOrDoubled = 0;
  const rows = {} as Record<Kind, Row[]>;
  for (const table of KINDS) {
    const all: Row[] = await db(table)
      .where({ merchant_id: merchantId })
      .select(
        'id',
        'status',
        'operator',
        'provider',
        'amount',
        'currency',
        ...(table === 'refunds' ? ['payment_id'] : []),
      );
    rows[table] = all;
    const tableRow = await objectRow(db, merchantId, table, all, load.tally[table]);
    objectRows.push(tableRow.row);
    lostOrDoubled += tableRow.lostOrDoubled;
  }
  const ledgerProblems = await checkLedger(db);
  const [pawapayTxs, airtelTxs] = [pawapay.transactions(), airtel.transactions()];
  const [pawapayCheck, airtelCheck, mismatches] = agreement(rows, pawapayTxs, airtelTxs);
  return {
    objectRows,
    checks: [
      await eventsCheck(db, rows),
      ledgerCheck(ledgerProblems),
      await callbacksCheck(db, rows, pawapayTxs, airtelTxs),
      pawapayCheck,
      airtelCheck,
      replayCheck(load.replays.tally),
    ],
    lostOrDoubled,
    ledgerProblems,
    providerMismatches: mismatches,
  };
}

/** Every final object has its final event, exactly once (the merchant has no endpoint: the events are counted in the database). */
async function eventsCheck(db: Knex, rows: Record<Kind, Row[]>): Promise<Check> {
  let final = 0;
  let once = 0;
  let missing = 0;
  let more = 0;
  for (const kind of KINDS) {
    const done = rows[kind].filter((r) => ours(r.status) !== 'open');
    const ids = done.map((r) => r.id);
    const counts = new Map<string, number>();
    for (let i = 0; i < ids.length; i += 1000) {
      const found: { object_id: string; type: string; n: string }[] = await db('events')
        .whereIn('object_id', ids.slice(i, i + 1000))
        .whereIn('type', [`${SINGULAR[kind]}.succeeded`, `${SINGULAR[kind]}.failed`, `${SINGULAR[kind]}.cancelled`])
        .groupBy('object_id', 'type')
        .select('object_id', 'type', db.raw('count(*) as n'));
      for (const e of found) counts.set(`${e.object_id} ${e.type}`, Number(e.n));
    }
    for (const r of done) {
      final++;
      // a refunded payment succeeded first
      const type = `${SINGULAR[kind]}.${r.status === 'refunded' ? 'succeeded' : r.status}`;
      const n = counts.get(`${r.id} ${type}`) ?? 0;
      if (n === 1) once++;
      else if (n === 0) missing++;
      else more++;
    }
  }
  const [{ n: deliveries }] = await db('webhook_deliveries as d')
    .join('events as e', 'e.id', 'd.event_id')
    .whereIn('e.object_id', KINDS.flatMap((k) => rows[k].map((r) => r.id)).slice(0, 30_000))
    .count<{ n: string }[]>('* as n');
  return {
    name: 'events (database)',
    ok: missing === 0 && more === 0,
    detail: `${final} final objects: final event once ${once}, missing ${missing}, more than once ${more}; deliveries ${deliveries} (no endpoint: live ones must be https)`,
  };
}

/**
 * The callbacks the simulators sent and what the service made of them: every stored callback
 * processed, none of them refused for its amount; repeats (the callback-twice numbers, a
 * simulator's own retries) counted as duplicates, stale ones (pawaPay PROCESSING after COMPLETED)
 * ignored before they are stored.
 */
async function callbacksCheck(
  db: Knex,
  rows: Record<Kind, Row[]>,
  pawapayTxs: PawapayTransaction[],
  airtelTxs: AirtelTransaction[],
): Promise<Check> {
  const ids = KINDS.flatMap((k) => rows[k].map((r) => r.id));
  const stored: { provider: string; outcome: string | null; n: string }[] = [];
  for (let i = 0; i < ids.length; i += 1000)
    stored.push(
      ...(await db('provider_callbacks')
        .whereIn('object_id', ids.slice(i, i + 1000))
        .groupBy('provider', 'outcome')
        .select('provider', 'outcome', db.raw('count(*) as n'))),
    );
  const sum = (provider: string, pred: (outcome: string | null) => boolean) =>
    stored.filter((r) => r.provider === provider && pred(r.outcome)).reduce((n, r) => n + Number(r.n), 0);
  const sent = {
    pawapay: pawapayTxs.reduce((n, t) => n + t.callbacksSent, 0),
    airtel: airtelTxs.reduce((n, t) => n + t.callbacksSent, 0),
  };
  let ok = true;
  const parts = (['pawapay', 'airtel'] as const).map((provider) => {
    const unprocessed = sum(provider, (o) => o === null);
    const refused = sum(provider, (o) => o === 'amount-mismatch');
    if (unprocessed || refused) ok = false;
    const outcomes = counted(
      new Map(stored.filter((r) => r.provider === provider).map((r) => [r.outcome ?? 'unprocessed', Number(r.n)])),
    );
    return `${provider}: sent ${sent[provider]}, stored ${sum(provider, () => true)} (${outcomes || 'none'})`;
  });
  return { name: 'provider callbacks', ok, detail: parts.join('; ') };
}

/** Each connector's agreement row, and the disagreements. */
export function agreement(
  rows: Record<Kind, Row[]>,
  pawapayTxs: PawapayTransaction[],
  airtelTxs: AirtelTransaction[],
): [Check, Check, string[]] {
  const p = new Agreement('pawapay');
  const a = new Agreement('airtel');
  const ofConnector = { pawapay: p, airtel: a };
  const pawapayById = new Map(pawapayTxs.map((t) => [t.id, t]));
  const airtelById = new Map(airtelTxs.map((t) => [t.id, t]));
  const payments = new Map(rows.payments.map((r) => [r.id, r]));
  const ourPawapayIds = new Set<string>();
  const ourAirtelIds = new Set<string>();
  const uuid = (id: string) => id.slice(id.indexOf('_') + 1);
  const sameAmount = (ag: Agreement, op: Row, amount: string | undefined) => {
    if (amount === undefined) return;
    const sent = decimalToMinor(amount, op.currency);
    if (sent !== Number(op.amount))
      ag.disagree(`${op.id}: amount ${op.amount} ${op.currency} (minor) here, ${amount} at ${ag.connector}`);
  };

  for (const kind of KINDS) {
    for (const op of rows[kind]) {
      const connector = CONNECTOR_OF[op.operator];
      const ag = ofConnector[connector];
      if (op.provider !== null && op.provider !== connector)
        ag.disagree(`${op.id} (${op.operator}): handled by ${op.provider}, routed to ${connector}`);
      if (connector === 'pawapay') {
        ourPawapayIds.add(uuid(op.id));
        const t = pawapayById.get(uuid(op.id));
        if (t && t.kind !== { payments: 'deposit', refunds: 'refund', payouts: 'payout' }[kind])
          ag.disagree(`${op.id}: a ${t.kind} at pawaPay`);
        if (t) {
          ag.initiations(t.initiations);
          sameAmount(ag, op, t.amount);
          if (kind === 'refunds' && t.depositId !== uuid(op.payment_id!))
            ag.disagree(`${op.id}: refunds deposit ${t.depositId} at pawaPay, payment ${op.payment_id} here`);
        }
        ag.compare(kind, op, pawapaySaid(t), t?.failureCode ? ` (${t.failureCode})` : '');
      } else if (kind === 'refunds') {
        // Airtel has no refund transaction: the collection records whether it was refunded
        const payment = payments.get(op.payment_id!);
        const collection = payment && airtelById.get(toAirtelId(payment.id));
        const said: Said | 'never taken' = !collection ? 'never taken' : collection.refunded ? 'succeeded' : 'failed';
        if (collection && ours(op.status) !== 'open') {
          if (collection.refundRequests > 1) ag.refundRepeats++;
          else ag.initiations(collection.refundRequests);
        }
        ag.compare(kind, op, said, collection ? ` (refund requests ${collection.refundRequests})` : '');
      } else {
        const id = toAirtelId(op.id);
        ourAirtelIds.add(id);
        const t = airtelById.get(id);
        if (t && t.kind !== (kind === 'payments' ? 'collection' : 'disbursement'))
          ag.disagree(`${op.id}: a ${t.kind} at Airtel`);
        if (t) {
          ag.initiations(t.initiations);
          sameAmount(ag, op, t.amount);
        }
        ag.compare(kind, op, airtelSaid(t), t ? ` (${t.status} ${t.responseCode})` : '');
      }
    }
  }
  // a refunded Airtel collection is refunded by exactly one succeeded refund of ours
  const airtelRefundsOk = new Map<string, number>();
  for (const r of rows.refunds)
    if (CONNECTOR_OF[r.operator] === 'airtel' && r.status === 'succeeded')
      airtelRefundsOk.set(r.payment_id!, (airtelRefundsOk.get(r.payment_id!) ?? 0) + 1);
  for (const [paymentId, n] of airtelRefundsOk)
    if (n > 1) a.disagree(`${paymentId}: ${n} succeeded refunds here, Airtel refunds a collection once`);
  for (const t of airtelTxs)
    if (
      t.kind === 'collection' &&
      t.refunded &&
      !rows.refunds.some((r) => r.status !== 'failed' && toAirtelId(r.payment_id!) === t.id)
    )
      a.disagree(`${t.id}: refunded at Airtel, no refund of it here`);
  // no transaction at a provider that is not one of ours (a second transaction for one operation)
  const strangers = {
    pawapay: pawapayTxs.filter((t) => !ourPawapayIds.has(t.id)),
    airtel: airtelTxs.filter((t) => !ourAirtelIds.has(t.id)),
  };
  for (const t of strangers.pawapay) p.disagree(`pawaPay ${t.kind} ${t.id} (${t.status}): not one of our operations`);
  for (const t of strangers.airtel) a.disagree(`Airtel ${t.kind} ${t.id} (${t.status}): not one of our operations`);
  const pending = (txs: { status: string }[], open: string[]) =>
    counted(
      new Map(
        Object.entries(
          txs.reduce<Record<string, number>>(
            (m, t) => (open.includes(t.status) ? ((m[t.status] = (m[t.status] ?? 0) + 1), m) : m),
            {},
          ),
        ),
      ),
    );
  const pOpen = pending(pawapayTxs, ['ACCEPTED', 'ENQUEUED', 'SUBMITTED', 'PROCESSING', 'IN_RECONCILIATION']);
  const aOpen = pending(airtelTxs, ['TIP', 'TA']);
  return [
    p.check(
      `; ${pawapayTxs.length} transactions at the simulator, ${strangers.pawapay.length} not ours${pOpen ? `, open there: ${pOpen}` : ''}`,
    ),
    a.check(
      `; ${airtelTxs.length} transactions at the simulator (${airtelTxs.filter((t) => t.refunded).length} collections refunded), ${strangers.airtel.length} not ours${aOpen ? `, open there: ${aOpen}` : ''}`,
    ),
    [...p.disagreements, ...a.disagreements],
  ];
}
