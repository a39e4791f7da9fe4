import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Currency } from '../../../shared/vocabulary';
import { HttpClient } from '../../../shared/httpClient';
import { decimalsNeeded, decimalToMinor, minorToDecimal } from '../../../shared/providers/amounts';
import { checkContract, describeErrors, REQUEST_CONTRACT } from '../../../shared/providers/pawapay/contract';
import { signMessage, type DigestAlgorithm } from '../../../shared/providers/pawapay/signatures';
import {
  ourCurrency,
  type OperationType,
  type PawapayProvider,
  PAWAPAY_PROVIDERS,
} from '../../../shared/providers/pawapay/wire';
import { simFinances, type SimFinances, type SimStatementsOptions } from './statements';

/**
 * A pawaPay Merchant API v2 simulator (README.md in this folder): a real HTTP server with
 * in-memory state, behaving as the public reference says, enforcing the same JSON Schemas as the
 * connector's contract tests, and answering with pawaPay's own error shapes and failure codes.
 * Outcomes are chosen by the phone number's last three digits (the table is in the README):
 * pawaPay's DRC sandbox test numbers, then the simulator's own scenarios (2xx).
 */

export type SimStatus =
  'ACCEPTED' | 'ENQUEUED' | 'SUBMITTED' | 'PROCESSING' | 'IN_RECONCILIATION' | 'COMPLETED' | 'FAILED';
export type SimKind = 'deposit' | 'payout' | 'refund';
type Availability = 'OPERATIONAL' | 'DELAYED' | 'CLOSED';

export interface SimTransaction {
  kind: SimKind;
  /** pawaPay's id (our UUID) */
  id: string;
  /** for a refund: the refunded deposit */
  depositId?: string;
  provider: PawapayProvider;
  phoneNumber: string;
  /** as received */
  amount: string;
  currency: Currency;
  status: SimStatus;
  failureCode: string | null;
  scenario: string;
  /** initiation requests received for this id (1, or more when resent: DUPLICATE_IGNORED) */
  initiations: number;
  statusQueries: number;
  callbacksSent: number;
  created: string;
  /** when it became COMPLETED or FAILED */
  completedAt?: string;
}

export interface PawapaySimulatorOptions {
  /** 0 (default): a free port */
  port?: number;
  host?: string;
  /** the API token it accepts (Bearer) */
  token: string;
  /** where callbacks are POSTed (the URL registered with pawaPay); null: none */
  callbackUrl?: string | null;
  /** from acceptance to the final status and its callback (ms); default 300 */
  callbackDelayMs?: number;
  /** how long the slow-initiation scenario (…205) waits before answering; default 15 000 */
  slowInitiationMs?: number;
  /** how long IN_RECONCILIATION lasts in scenario …201; default 1 000 */
  reconciliationMs?: number;
  /** sign callbacks (RFC 9421) as pawaPay does when signed callbacks are enabled; default true */
  signCallbacks?: boolean;
  /** DER (pawaPay's examples; default) or raw r‖s */
  signatureEncoding?: 'der' | 'raw';
  digest?: DigestAlgorithm;
  /** how active-conf and availability render operationTypes; default 'object' */
  operationTypesShape?: 'object' | 'array';
  /** one line per request/callback; default silent */
  log?: (line: string) => void;
  /** statements and wallets (simStatements.ts): the contract's fee, how long a statement takes */
  statements?: SimStatementsOptions;
  /** the clock its callbacks are signed by (`created`); default the system's (a test that moves the service's passes it) */
  now?: () => number;
}

export interface PawapaySimulator {
  url: string;
  port: number;
  close(): Promise<void>;
  transactions(): SimTransaction[];
  /** the current callback signing key's id */
  keyId(): string;
  /** a new key pair (and keyid); the old one is no longer published */
  rotateKey(): void;
  setAvailability(provider: PawapayProvider, type: OperationType, status: Availability): void;
  /** requests refused (by code), for the tests */
  refusals(): Record<string, number>;
  /** where callbacks go from now on (the URL registered with pawaPay: the service's, once it listens); `deliverTo`: a tap that receives them instead, still signed for `url` */
  setCallbackUrl(url: string | null, deliverTo?: string): void;
  /** the wallets, the statements' rows and the injections (simStatements.ts) */
  finances: SimFinances;
  /** scenario …209: its status queries answer 500 until this is called */
  endStatusOutage(): void;
}

/** Limits served by active-conf, per provider, currency, type: [decimalsInAmount, min, max]. CDF: a captured sandbox answer; USD: the simulator's own. */
const CONF: Record<PawapayProvider, Record<Currency, Record<OperationType, [string, string, string]>>> = {
  VODACOM_MPESA_COD: {
    CDF: {
      DEPOSIT: ['NONE', '500', '1000000'],
      PAYOUT: ['NONE', '1000', '1000000'],
      REFUND: ['NONE', '1000', '1000000'],
    },
    USD: {
      DEPOSIT: ['TWO_PLACES', '0.5', '2500'],
      PAYOUT: ['TWO_PLACES', '1', '2500'],
      REFUND: ['TWO_PLACES', '1', '2500'],
    },
  },
  AIRTEL_COD: {
    CDF: {
      DEPOSIT: ['TWO_PLACES', '100', '6250000'],
      PAYOUT: ['TWO_PLACES', '100', '6250000'],
      REFUND: ['TWO_PLACES', '100', '6250000'],
    },
    USD: {
      DEPOSIT: ['TWO_PLACES', '0.1', '2500'],
      PAYOUT: ['TWO_PLACES', '0.1', '2500'],
      REFUND: ['TWO_PLACES', '0.1', '2500'],
    },
  },
  ORANGE_COD: {
    CDF: {
      DEPOSIT: ['TWO_PLACES', '10', '1000000'],
      PAYOUT: ['TWO_PLACES', '10', '1000000'],
      REFUND: ['TWO_PLACES', '10', '1000000'],
    },
    USD: {
      DEPOSIT: ['TWO_PLACES', '0.1', '2500'],
      PAYOUT: ['TWO_PLACES', '0.1', '2500'],
      REFUND: ['TWO_PLACES', '0.1', '2500'],
    },
  },
};

const TYPE_OF: Record<SimKind, OperationType> = { deposit: 'DEPOSIT', payout: 'PAYOUT', refund: 'REFUND' };
const ID_FIELD: Record<SimKind, 'depositId' | 'payoutId' | 'refundId'> = {
  deposit: 'depositId',
  payout: 'payoutId',
  refund: 'refundId',
};
const PATH_KIND: Record<string, SimKind> = {
  '/v2/deposits': 'deposit',
  '/v2/payouts': 'payout',
  '/v2/refunds': 'refund',
};

interface Scenario {
  name: string;
  final: 'COMPLETED' | 'FAILED' | 'NEVER';
  failureCode?: string;
  /** the status it stays in when final is NEVER */
  stuckIn?: SimStatus;
  reconciliation?: boolean;
  callbackTwice?: boolean;
  staleCallbackAfter?: boolean;
  initiation500Created?: boolean;
  initiation500NotCreated?: boolean;
  slowInitiation?: boolean;
  pendingUntilAsked?: boolean;
  /** its callback names another amount than was asked (a provider's fault the service must never apply) */
  callbackWrongAmount?: boolean;
  /** COMPLETED without a callback, its status queries failing until endStatusOutage() */
  lostCallbackAndStatus?: boolean;
}

/**
 * The outcome of a phone number's last three digits, for an operation. pawaPay's DRC test numbers
 * (https://docs.pawapay.io/v2/docs/test_numbers): …789 COMPLETED, …019 PAYER_LIMIT_REACHED,
 * …029 PAYER_NOT_FOUND, …039 PAYMENT_NOT_APPROVED, …049 INSUFFICIENT_BALANCE, …069 UNSPECIFIED_FAILURE
 * (deposits), …089 RECIPIENT_NOT_FOUND, …119 UNSPECIFIED_FAILURE (payouts), …129 stuck SUBMITTED
 * without a callback. The simulator's own: …201 to …207 (README).
 */
export function scenarioOf(phoneNumber: string, kind: SimKind): Scenario {
  const tail = phoneNumber.slice(-3);
  const moneyIn = kind === 'deposit';
  const moneyOut = kind !== 'deposit';
  const fail = (code: string): Scenario => ({ name: `failed ${code}`, final: 'FAILED', failureCode: code });
  switch (tail) {
    case '019':
      if (moneyIn) return fail('PAYER_LIMIT_REACHED');
      break;
    case '029':
      if (moneyIn) return fail('PAYER_NOT_FOUND');
      break;
    case '039':
      if (moneyIn) return fail('PAYMENT_NOT_APPROVED');
      break;
    case '049':
      if (moneyIn) return fail('INSUFFICIENT_BALANCE');
      break;
    case '069':
      if (moneyIn) return fail('UNSPECIFIED_FAILURE');
      break;
    case '089':
      if (moneyOut) return fail('RECIPIENT_NOT_FOUND');
      break;
    case '119':
      if (moneyOut) return fail('UNSPECIFIED_FAILURE');
      break;
    case '129':
      return { name: 'stuck SUBMITTED, no callback', final: 'NEVER', stuckIn: 'SUBMITTED' };
    case '201':
      return { name: 'IN_RECONCILIATION, then COMPLETED', final: 'COMPLETED', reconciliation: true };
    case '202':
      return { name: 'COMPLETED, callback sent twice', final: 'COMPLETED', callbackTwice: true };
    case '203':
      return {
        name: 'COMPLETED, then a stale PROCESSING callback (out of order)',
        final: 'COMPLETED',
        staleCallbackAfter: true,
      };
    case '204':
      return {
        name: 'HTTP 500 on initiation, created anyway, COMPLETED',
        final: 'COMPLETED',
        initiation500Created: true,
      };
    case '205':
      return { name: 'initiation answered late, COMPLETED', final: 'COMPLETED', slowInitiation: true };
    case '206':
      return {
        name: 'PROCESSING, no callback, until its status is asked: then COMPLETED',
        final: 'COMPLETED',
        pendingUntilAsked: true,
      };
    case '207':
      return {
        name: 'HTTP 500 on the first initiation, not created',
        final: 'COMPLETED',
        initiation500NotCreated: true,
      };
    case '209':
      return {
        name: 'COMPLETED, no callback, status queries answer 500 until the outage ends',
        final: 'COMPLETED',
        lostCallbackAndStatus: true,
      };
    case '208':
      return {
        name: 'COMPLETED, its callback naming ten times the amount',
        final: 'COMPLETED',
        callbackWrongAmount: true,
      };
  }
  return { name: 'COMPLETED', final: 'COMPLETED' };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startPawapaySimulator(opts: PawapaySimulatorOptions): Promise<PawapaySimulator> {
  const callbackDelayMs = opts.callbackDelayMs ?? 300;
  const slowInitiationMs = opts.slowInitiationMs ?? 15_000;
  const reconciliationMs = opts.reconciliationMs ?? 1_000;
  const log = opts.log ?? (() => {});
  const client = new HttpClient(8);
  const txs = new Map<string, SimTransaction>();
  /** ids whose first initiation failed (scenario …207) */
  const failedOnce = new Set<string>();
  const refused: Record<string, number> = {};
  const timers = new Set<NodeJS.Timeout>();
  const availability = new Map<string, Availability>();
  let closed = false;
  let statusOutage = true;
  let key = newKey();

  function newKey(): { id: string; privateKey: KeyObject; pem: string } {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return {
      id: `sim-${randomUUID().slice(0, 8)}`,
      privateKey,
      pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    };
  }

  function later(ms: number, fn: () => void | Promise<void>): void {
    if (closed) return;
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed) void Promise.resolve(fn()).catch((err) => log(`pawapay-sim: ${(err as Error).message}`));
    }, ms);
    timers.add(t);
  }

  const availabilityOf = (provider: PawapayProvider, type: OperationType): Availability =>
    availability.get(`${provider}|${type}`) ?? 'OPERATIONAL';

  // ---- wire views ------------------------------------------------------------------------------

  function view(tx: SimTransaction, status: SimStatus = tx.status): Record<string, unknown> {
    const party = { type: 'MMO', accountDetails: { phoneNumber: tx.phoneNumber, provider: tx.provider } };
    // amounts are echoed with the currency's decimals ("100.00"), as pawaPay's answers show them
    const minor = decimalToMinor(tx.amount, tx.currency);
    const out: Record<string, unknown> = {
      [ID_FIELD[tx.kind]]: tx.id,
      status,
      amount: minor === undefined ? tx.amount : minorToDecimal(minor, tx.currency, true),
      currency: tx.currency,
      country: 'COD',
      created: tx.created,
    };
    if (tx.kind === 'deposit') out.payer = party;
    else out.recipient = party;
    if (tx.kind === 'refund') out.depositId = tx.depositId;
    if (status === 'COMPLETED') out.providerTransactionId = `SIM${tx.id.replace(/-/g, '').slice(0, 12).toUpperCase()}`;
    if (status === 'FAILED' && tx.failureCode)
      out.failureReason = { failureCode: tx.failureCode, failureMessage: `Simulated ${tx.failureCode}` };
    return out;
  }

  // ---- callbacks -------------------------------------------------------------------------------

  let deliverTo: string | undefined;

  async function sendCallback(tx: SimTransaction, status: SimStatus = tx.status, wrongAmount = false): Promise<void> {
    if (!opts.callbackUrl || closed) return;
    const shown = view(tx, status);
    if (wrongAmount && typeof shown.amount === 'string') shown.amount = `${shown.amount.split('.')[0]}0`;
    const body = JSON.stringify(shown);
    let headers: Record<string, string> = { 'content-type': 'application/json' };
    if (opts.signCallbacks !== false) {
      headers = await signMessage({
        privateKey: key.privateKey,
        keyId: key.id,
        created: opts.now ? Math.floor(opts.now() / 1000) : undefined,
        url: opts.callbackUrl,
        body,
        digest: opts.digest ?? 'sha-512',
        encoding: opts.signatureEncoding ?? 'der',
      });
    }
    for (let attempt = 1; attempt <= 3 && !closed; attempt++) {
      try {
        const res = await client.request(deliverTo ?? opts.callbackUrl, {
          method: 'POST',
          headers,
          body,
          timeoutMs: 5_000,
        });
        tx.callbacksSent++;
        log(`pawapay-sim: callback ${tx.kind} ${tx.id} ${status} → HTTP ${res.status}`);
        if (res.status >= 200 && res.status < 300) return;
      } catch (err) {
        log(`pawapay-sim: callback ${tx.kind} ${tx.id} failed: ${(err as Error).message}`);
      }
      await sleep(200 * attempt);
    }
  }

  function finish(tx: SimTransaction, s: Scenario): void {
    tx.status = s.final === 'FAILED' ? 'FAILED' : 'COMPLETED';
    tx.failureCode = s.final === 'FAILED' ? (s.failureCode ?? 'UNSPECIFIED_FAILURE') : null;
    tx.completedAt = new Date().toISOString();
    if (s.lostCallbackAndStatus) return;
    void (async () => {
      await sendCallback(tx, tx.status, s.callbackWrongAmount);
      if (s.callbackTwice) await sendCallback(tx);
      if (s.staleCallbackAfter) await sendCallback(tx, 'PROCESSING');
    })();
  }

  /** From acceptance to the final status, as the scenario says. */
  function progress(tx: SimTransaction, s: Scenario): void {
    if (tx.kind === 'payout' && availabilityOf(tx.provider, 'PAYOUT') === 'DELAYED') {
      tx.status = 'ENQUEUED';
      return; // released by setAvailability(…, 'OPERATIONAL')
    }
    later(callbackDelayMs / 2, () => {
      if (tx.status === 'ACCEPTED') tx.status = s.final === 'NEVER' ? (s.stuckIn ?? 'SUBMITTED') : 'PROCESSING';
    });
    if (s.final === 'NEVER' || s.pendingUntilAsked) return;
    if (s.reconciliation) {
      later(callbackDelayMs, () => {
        tx.status = 'IN_RECONCILIATION';
      });
      later(callbackDelayMs + reconciliationMs, () => finish(tx, s));
      return;
    }
    later(callbackDelayMs, () => finish(tx, s));
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  function reply(res: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  function refuse(
    res: http.ServerResponse,
    httpStatus: number,
    code: string,
    message: string,
    idField?: string,
    id?: unknown,
  ): void {
    refused[code] = (refused[code] ?? 0) + 1;
    log(`pawapay-sim: refused ${code}: ${message}`);
    const body: Record<string, unknown> = {
      status: 'REJECTED',
      failureReason: { failureCode: code, failureMessage: message },
    };
    if (idField && typeof id === 'string') body[idField] = id;
    reply(res, httpStatus, body);
  }

  /** Bearer token: none → 401 NO_AUTHENTICATION; another → 403 AUTHENTICATION_ERROR (https://docs.pawapay.io/v2/docs/failure_codes). */
  function authorised(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const h = req.headers.authorization;
    if (!h || !/^Bearer\s+\S/.test(h)) {
      refuse(res, 401, 'NO_AUTHENTICATION', 'We did not find the API token in the request headers.');
      return false;
    }
    if (h.replace(/^Bearer\s+/, '') !== opts.token) {
      refuse(res, 403, 'AUTHENTICATION_ERROR', 'The API token specified for authentication is not valid or missing.');
      return false;
    }
    return true;
  }

  async function initiate(kind: SimKind, raw: Buffer, res: http.ServerResponse): Promise<void> {
    const idField = ID_FIELD[kind];
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString('utf8'));
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
    } catch {
      return refuse(res, 400, 'INVALID_INPUT', 'We were unable to parse the payload of the request.');
    }
    const id = body[idField];
    const check = checkContract(REQUEST_CONTRACT[`/v2/${kind}s` as '/v2/deposits'], body);
    if (!check.ok) {
      const e = check.errors[0];
      const what = describeErrors(check.errors);
      if (e.keyword === 'required') return refuse(res, 400, 'MISSING_PARAMETER', what, idField, id);
      if (e.keyword === 'additionalProperties') return refuse(res, 400, 'UNSUPPORTED_PARAMETER', what, idField, id);
      if (e.instancePath.endsWith('/phoneNumber')) return refuse(res, 200, 'INVALID_PHONE_NUMBER', what, idField, id);
      return refuse(res, 400, 'INVALID_PARAMETER', what, idField, id);
    }
    const uuid = String(id);
    const existing = txs.get(uuid);
    if (existing) {
      if (existing.kind !== kind)
        return refuse(res, 400, 'INVALID_PARAMETER', `${idField} is already used`, idField, id);
      existing.initiations++;
      return reply(res, 200, { [idField]: uuid, status: 'DUPLICATE_IGNORED', created: existing.created });
    }
    const currency = ourCurrency(body.currency);
    const amountText = String(body.amount);
    let provider: PawapayProvider;
    let phoneNumber: string;
    let deposit: SimTransaction | undefined;
    if (kind === 'refund') {
      deposit = txs.get(String(body.depositId));
      if (!deposit || deposit.kind !== 'deposit')
        return refuse(res, 200, 'DEPOSIT_NOT_FOUND', 'The deposit to refund was not found.', idField, id);
      if (deposit.status !== 'COMPLETED')
        return refuse(res, 200, 'DEPOSIT_NOT_COMPLETED', 'Only a completed deposit can be refunded.', idField, id);
      provider = deposit.provider;
      phoneNumber = deposit.phoneNumber;
      if (currency !== deposit.currency)
        return refuse(res, 200, 'INVALID_CURRENCY', 'The currency is not the deposit currency.', idField, id);
    } else {
      const party = (kind === 'deposit' ? body.payer : body.recipient) as {
        accountDetails: { phoneNumber: string; provider: PawapayProvider };
      };
      provider = party.accountDetails.provider;
      phoneNumber = party.accountDetails.phoneNumber;
    }
    const type = TYPE_OF[kind];
    const conf = currency ? CONF[provider][currency]?.[type] : undefined;
    if (!currency || !conf)
      return refuse(res, 200, 'INVALID_CURRENCY', 'The currency is not supported by the provider.', idField, id);
    const minor = decimalToMinor(amountText, currency);
    const decimals = conf[0] === 'NONE' ? 0 : conf[0] === 'ONE_PLACE' ? 1 : 2;
    if (minor === undefined || decimalsNeeded(minor, currency) > decimals) {
      return refuse(
        res,
        200,
        'INVALID_AMOUNT',
        'The number of decimal places specified in the amount is not supported by the provider.',
        idField,
        id,
      );
    }
    if (minor < decimalToMinor(conf[1], currency)! || minor > decimalToMinor(conf[2], currency)!) {
      return refuse(
        res,
        200,
        'AMOUNT_OUT_OF_BOUNDS',
        `The amount is outside of the transaction limits (${conf[1]} to ${conf[2]} ${currency}).`,
        idField,
        id,
      );
    }
    if (kind === 'refund') {
      const refunded = [...txs.values()]
        .filter((t) => t.kind === 'refund' && t.depositId === deposit!.id && t.status !== 'FAILED')
        .reduce((sum, t) => sum + (decimalToMinor(t.amount, t.currency) ?? 0), 0);
      if (refunded + minor > decimalToMinor(deposit!.amount, deposit!.currency)!) {
        return refuse(
          res,
          200,
          'AMOUNT_OUT_OF_BOUNDS',
          'The refund amount is more than what the deposit has left.',
          idField,
          id,
        );
      }
    }
    if (availabilityOf(provider, type) === 'CLOSED')
      return refuse(
        res,
        200,
        'PROVIDER_TEMPORARILY_UNAVAILABLE',
        'The provider is temporarily unavailable.',
        idField,
        id,
      );

    // refunds follow the refunded deposit's number: a payout failure number fails them too
    const scenario = scenarioOf(phoneNumber, kind === 'refund' ? 'refund' : kind);
    if (scenario.initiation500NotCreated && !failedOnce.has(uuid)) {
      failedOnce.add(uuid);
      return refuse(res, 500, 'UNKNOWN_ERROR', 'Simulated internal error before the request was stored.', idField, id);
    }
    const tx: SimTransaction = {
      kind,
      id: uuid,
      depositId: kind === 'refund' ? deposit!.id : undefined,
      provider,
      phoneNumber,
      amount: amountText,
      currency,
      status: 'ACCEPTED',
      failureCode: null,
      scenario: scenario.name,
      initiations: 1,
      statusQueries: 0,
      callbacksSent: 0,
      created: new Date().toISOString(),
    };
    txs.set(uuid, tx);
    progress(tx, scenario);
    if (scenario.initiation500Created)
      return refuse(res, 500, 'UNKNOWN_ERROR', 'Simulated internal error after the request was stored.', idField, id);
    if (scenario.slowInitiation) await sleep(slowInitiationMs);
    if (closed) return;
    reply(res, 200, { [idField]: uuid, status: 'ACCEPTED', created: tx.created });
  }

  function status(kind: SimKind, id: string, res: http.ServerResponse): void {
    if (!/^[0-9a-fA-F-]{36}$/.test(id))
      return refuse(res, 400, 'INVALID_PARAMETER', `${ID_FIELD[kind]} must be a UUID`);
    const tx = txs.get(id);
    if (!tx || tx.kind !== kind) return reply(res, 200, { status: 'NOT_FOUND' });
    tx.statusQueries++;
    const scenario = scenarioOf(tx.phoneNumber, tx.kind);
    if (scenario.lostCallbackAndStatus && statusOutage)
      return refuse(res, 500, 'UNKNOWN_ERROR', 'Simulated outage of the status endpoint.');
    if (scenario.pendingUntilAsked && tx.status !== 'COMPLETED' && tx.status !== 'FAILED') {
      // open until someone asks: the first status query finds it final (and its callback leaves)
      finish(tx, scenario);
    }
    reply(res, 200, { status: 'FOUND', data: view(tx) });
  }

  function renderOperationTypes<T>(
    entries: [OperationType, T][],
    arrayItem: (type: OperationType, v: T) => Record<string, unknown>,
  ): unknown {
    return opts.operationTypesShape === 'array'
      ? entries.map(([t, v]) => arrayItem(t, v))
      : Object.fromEntries(entries);
  }

  function activeConf(): unknown {
    return {
      companyName: 'pawaPay simulator',
      signatureConfiguration: { signedRequestsOnly: false, signedCallbacks: opts.signCallbacks !== false },
      countries: [
        {
          country: 'COD',
          displayName: { en: 'Democratic Republic of the Congo', fr: 'République démocratique du Congo' },
          prefix: '243',
          providers: PAWAPAY_PROVIDERS.map((provider) => ({
            provider,
            currencies: (
              Object.entries(CONF[provider]) as [Currency, Record<OperationType, [string, string, string]>][]
            ).map(([currency, types]) => ({
              currency,
              operationTypes: renderOperationTypes(
                (Object.entries(types) as [OperationType, [string, string, string]][]).map(([t, [d, min, max]]) => [
                  t,
                  { minAmount: min, maxAmount: max, decimalsInAmount: d, status: availabilityOf(provider, t) },
                ]),
                (t, v) => ({ operationType: t, ...v }),
              ),
            })),
          })),
        },
      ],
    };
  }

  function availabilityBody(): unknown {
    return [
      {
        country: 'COD',
        providers: PAWAPAY_PROVIDERS.map((provider) => ({
          provider,
          operationTypes: renderOperationTypes(
            (['DEPOSIT', 'PAYOUT', 'REFUND'] as OperationType[]).map((t) => [t, availabilityOf(provider, t)]),
            (t, v) => ({ operationType: t, status: v }),
          ),
        })),
      },
    ];
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '');
    log(`pawapay-sim: ${req.method} ${path}`);
    // inspection (not pawaPay's): every transaction, its state and how many initiations it received
    if (req.method === 'GET' && path === '/_sim/transactions') return reply(res, 200, [...txs.values()]);
    if (req.method === 'GET' && path === '/_sim/refusals') return reply(res, 200, refused);
    // the public keys and availability are read without a token (pawaPay's example fetches the keys with none)
    if (req.method === 'GET' && path === '/v2/public-key/http') return reply(res, 200, [{ id: key.id, key: key.pem }]);
    if (req.method === 'GET' && path === '/v2/availability') return reply(res, 200, availabilityBody());
    if (finances.download(path, res)) return;
    if (!authorised(req, res)) return;
    if (finances.handle(req.method ?? '', path, raw, res)) return;
    if (req.method === 'POST' && PATH_KIND[path]) return initiate(PATH_KIND[path], raw, res);
    const m = /^\/v2\/(deposits|payouts|refunds)\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && m) return status(PATH_KIND[`/v2/${m[1]}`], decodeURIComponent(m[2]), res);
    if (req.method === 'GET' && path === '/v2/active-conf') return reply(res, 200, activeConf());
    reply(res, 404, {
      status: 'REJECTED',
      failureReason: { failureCode: 'NOT_FOUND', failureMessage: 'No such endpoint' },
    });
  }

  let selfUrl = '';
  const finances = simFinances(() => txs.values(), opts.statements ?? {}, {
    url: () => selfUrl,
    client,
    later,
    log,
    // the statement callback is signed as the transaction callbacks are, for its own URL
    sign: async (url, body) =>
      opts.signCallbacks === false
        ? { 'content-type': 'application/json' }
        : signMessage({
            privateKey: key.privateKey,
            keyId: key.id,
            created: opts.now ? Math.floor(opts.now() / 1000) : undefined,
            url,
            body,
            digest: opts.digest ?? 'sha-512',
            encoding: opts.signatureEncoding ?? 'der',
          }),
  });

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      log(`pawapay-sim: ${(err as Error).message}`);
      if (!res.headersSent)
        reply(res, 500, {
          status: 'REJECTED',
          failureReason: { failureCode: 'UNKNOWN_ERROR', failureMessage: 'Internal error' },
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host ?? '127.0.0.1';
  selfUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    transactions: () => [...txs.values()].map((t) => ({ ...t })),
    keyId: () => key.id,
    setCallbackUrl: (url: string | null, tap?: string) => {
      opts.callbackUrl = url;
      deliverTo = tap;
    },
    rotateKey: () => {
      key = newKey();
    },
    refusals: () => ({ ...refused }),
    finances: finances.finances,
    endStatusOutage: () => {
      statusOutage = false;
    },
    setAvailability: (provider, type, value) => {
      availability.set(`${provider}|${type}`, value);
      if (type === 'PAYOUT' && value !== 'DELAYED') {
        for (const tx of txs.values()) {
          if (tx.kind === 'payout' && tx.provider === provider && tx.status === 'ENQUEUED') {
            tx.status = 'ACCEPTED';
            progress(tx, scenarioOf(tx.phoneNumber, 'payout'));
          }
        }
      }
    },
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
