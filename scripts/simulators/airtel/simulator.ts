import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpClient } from '../../../shared/httpClient';
import type { Currency } from '../../../shared/vocabulary';
import { CURRENCY_EXPONENT, decimalToMinor } from '../../../shared/providers/amounts';
import { callbackHash, type CallbackHashOver } from '../../../shared/providers/airtel/callbackHash';
import { decryptPin, type OaepHash, type PinPadding } from '../../../shared/providers/airtel/pin';
import { check, type AirtelSchemaName, type SchemaProblem } from '../../../shared/providers/airtel/schema';
import { decimalsOf } from '../../../shared/providers/airtel/wire';
import { airtelReport, type AirtelFinances, type ReportRow } from './report';

/**
 * A simulator of the Airtel Money Africa Open API (https://developers.airtel.africa/documentation),
 * true to its reference as far as the reference goes (shared/providers/airtel/README.md#unclear-points-and-the-choices-made for the rest): a
 * real HTTP server with in-memory state, the OAuth2 token endpoint, USSD-push collections,
 * enquiries, full refunds, disbursements (v1 and v2, PIN decrypted and checked), and collection
 * callbacks (with `hash` when a secret is set). Every request is checked against the same JSON
 * Schemas as the connector's contract tests (./schema), and refused as Airtel refuses: its
 * envelope `{data, status: {code, message, result_code, response_code, success}}` and codes.
 *
 * Outcomes are chosen by the national number (SIMULATOR_NUMBERS below; the README has the table).
 */

export interface AirtelSimulatorOptions {
  /** 0 (default): a free port */
  port?: number;
  host?: string;
  clientId?: string;
  clientSecret?: string;
  /** the account's country (X-Country, body country): default CD */
  country?: string;
  currencies?: Currency[];
  /** decimals the API takes per currency (default: the currency's exponent) */
  decimals?: Partial<Record<Currency, number>>;
  /** token lifetime in seconds, written as a string in `expires_in` (default 180) */
  tokenLifetimeS?: number;
  /** where collection callbacks go; none: no callbacks */
  callbackUrl?: string | null;
  /** delay between a collection's final state and its callback (default 300 ms) */
  callbackDelayMs?: number;
  /** callback authentication: when set, callbacks carry `hash` */
  callbackHashSecret?: string;
  callbackHashOver?: CallbackHashOver;
  /** how long a collection stays TIP before the client "answers" (default 1 000 ms) */
  finalAfterMs?: number;
  /** the slow-initiation number's answer delay (default 15 000 ms) */
  slowInitiationMs?: number;
  /** the disbursement PIN expected (default "1234") and the key version's padding (default 'oaep', v2 keys) */
  pin?: string;
  pinPadding?: PinPadding;
  pinOaepHash?: OaepHash;
  /** answer a successful refund as the reference's own example does: status SUCCESS beside success: false */
  refundAnswersAsExample?: boolean;
  /** enquiries echo the transaction's amount and currency (the reference's enquiry example has neither; some answers carry them) */
  enquiryEchoesAmount?: boolean;
  /** the provider fee in basis points of each completed transaction, on the report (default 0) */
  feeBps?: number;
  /** the simulator's clock for the times of its records (default Date.now) */
  now?: () => number;
  log?: (line: string) => void;
}

export type SimStatus = 'TIP' | 'TS' | 'TF' | 'TA' | 'TE';

export interface SimTransaction {
  id: string;
  kind: 'collection' | 'disbursement';
  /** national number */
  msisdn: string;
  /** the amount as the JSON number's shortest text, and its currency */
  amount: string;
  currency: string;
  status: SimStatus;
  /** the code the transaction ended with (DP...) */
  responseCode: string;
  airtelMoneyId: string;
  /** initiation requests that named this id (refused repeats included) */
  initiations: number;
  enquiries: number;
  callbacksSent: number;
  refunded: boolean;
  refundRequests: number;
  /** when it reached TS, TF or TE (ms) */
  completedAt?: number;
}

export interface SimRequest {
  method: string;
  path: string;
  schema: AirtelSchemaName | null;
  /** what the schema check found (the simulator refuses any) */
  problems: SchemaProblem[];
  status: number;
}

export interface AirtelSimulator {
  url: string;
  /** Airtel's PIN public key (PEM, SubjectPublicKeyInfo) */
  publicKeyPem: string;
  close(): Promise<void>;
  transactions(): SimTransaction[];
  requests(): SimRequest[];
  tokenRequests(): number;
  /** every token issued so far is expired from now on (a token expiring mid-run) */
  expireTokens(): void;
  /** where callbacks go from now on (the URL registered with Airtel: the service's, once it listens) */
  setCallbackUrl(url: string | null): void;
  /** the transaction report and its injections (./report.ts) */
  finances: AirtelFinances;
  /** enquiries of the lost-callback number answer 500 until this is called */
  endEnquiryOutage(): void;
}

type Scenario =
  | 'success'
  | 'fail'
  | 'expire'
  | 'pending-until-asked'
  | 'tip-then-success'
  | 'ta-then-success'
  | 'callback-twice'
  | 'out-of-order'
  | 'error-500-created'
  | 'error-500-not-created'
  | 'ambiguous-unnamed'
  | 'slow'
  | 'token-expires'
  | 'lost';

interface NumberRule {
  scenario: Scenario;
  /** collection code, disbursement code */
  codes?: [string, string];
  what: string;
}

/** The test numbers (national 9 digits; ours are 243 + these). Any other number succeeds. */
export const SIMULATOR_NUMBERS: Record<string, NumberRule> = {
  '970000001': { scenario: 'success', what: 'succeeds (TS)' },
  '970000002': { scenario: 'fail', codes: ['DP00800001007', 'DP00900001007'], what: 'fails: not enough balance' },
  '970000003': {
    scenario: 'fail',
    codes: ['DP00800001002', 'DP00900001013'],
    what: 'fails: incorrect PIN (payout: refused)',
  },
  '970000004': {
    scenario: 'fail',
    codes: ['DP00800001003', 'DP00900001003'],
    what: 'fails: transaction limit exceeded',
  },
  '970000005': {
    scenario: 'fail',
    codes: ['DP00800001005', 'DP00900001005'],
    what: 'fails: the client did not enter the PIN (payout: failed)',
  },
  '970000006': { scenario: 'fail', codes: ['DP00800001008', 'DP00900001013'], what: 'fails: refused' },
  '970000007': {
    scenario: 'fail',
    codes: ['DP00800001010', 'DP00900001012'],
    what: 'fails: not permitted / barred (payout: incorrect number)',
  },
  '970000008': {
    scenario: 'fail',
    codes: ['DP00800001024', 'DP00900001005'],
    what: 'fails: timed out (payout: failed)',
  },
  '970000009': { scenario: 'expire', codes: ['DP00800001029', 'DP00900001005'], what: 'expires (TE)' },
  '970000010': {
    scenario: 'fail',
    codes: ['DP00800001009', 'DP00900001010'],
    what: 'fails: do not honor (payout: payer not allowed)',
  },
  '970000011': { scenario: 'fail', codes: ['DP00800001004', 'DP00900001004'], what: 'fails: invalid amount' },
  '970000020': {
    scenario: 'pending-until-asked',
    what: 'stays TIP, no callback, until an enquiry: then TS (answered), callback',
  },
  '970000021': { scenario: 'tip-then-success', what: 'the first enquiry answers TIP; TS after it, with a callback' },
  '970000022': {
    scenario: 'ta-then-success',
    what: 'the first enquiry answers TA (ambiguous); TS after it, with a callback',
  },
  '970000023': {
    scenario: 'ambiguous-unnamed',
    what: 'initiation answers 500, yet the transaction exists: two enquiries answer TA with airtel_money_id null, the third TS',
  },
  '970000030': { scenario: 'callback-twice', what: 'succeeds; the callback is sent twice' },
  '970000031': { scenario: 'out-of-order', what: 'succeeds; the callback arrives before the initiation is answered' },
  '970000040': {
    scenario: 'error-500-created',
    what: 'initiation answers 500, yet the transaction exists and succeeds',
  },
  '970000041': {
    scenario: 'slow',
    what: 'initiation answered after slowInitiationMs (15 s); the transaction succeeds',
  },
  '970000042': {
    scenario: 'token-expires',
    what: 'succeeds; every token expires right after the initiation is answered',
  },
  '970000050': {
    scenario: 'lost',
    what: 'succeeds (TS) without a callback; its enquiries answer 500 until endEnquiryOutage()',
  },
  '970000043': {
    scenario: 'error-500-not-created',
    what: 'the first initiation answers 500 without creating anything; a resend succeeds',
  },
};

/** enquiries the ambiguous-unnamed number answers TA (airtel_money_id null) before TS */
const AMBIGUOUS_ENQUIRIES = 2;

interface Tx extends SimTransaction {
  scenario: Scenario;
  failCode: string | null;
  created: number;
  settleTimer?: NodeJS.Timeout;
}

const COLLECTION_STATUS_CODE: Record<SimStatus, string> = {
  TS: 'DP00800001001',
  TIP: 'DP00800001006',
  TA: 'DP00800001000',
  TF: 'DP00800001008',
  TE: 'DP00800001029',
};
const DISBURSEMENT_STATUS_CODE: Record<SimStatus, string> = {
  TS: 'DP00900001001',
  TIP: 'DP00900001006',
  TA: 'DP00900001000',
  TF: 'DP00900001005',
  TE: 'DP00900001005',
};

const envelope = (
  httpCode: number,
  message: string,
  resultCode: string | undefined,
  responseCode: string | undefined,
  success: boolean,
  data: unknown = {},
) => ({
  data,
  status: {
    code: String(httpCode),
    message,
    ...(resultCode ? { result_code: resultCode } : {}),
    ...(responseCode ? { response_code: responseCode } : {}),
    success,
  },
});

export async function startAirtelSimulator(opts: AirtelSimulatorOptions = {}): Promise<AirtelSimulator> {
  const clientId = opts.clientId ?? 'sim-client-id';
  const clientSecret = opts.clientSecret ?? 'sim-client-secret';
  const country = opts.country ?? 'CD';
  const currencies = opts.currencies ?? ['USD', 'CDF'];
  const lifetimeS = opts.tokenLifetimeS ?? 180;
  const callbackDelayMs = opts.callbackDelayMs ?? 300;
  const finalAfterMs = opts.finalAfterMs ?? 1_000;
  const slowMs = opts.slowInitiationMs ?? 15_000;
  const expectedPin = opts.pin ?? '1234';
  const padding = opts.pinPadding ?? 'oaep';
  const log = opts.log ?? (() => {});
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: padding === 'pkcs1' ? 1024 : 2048 });
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  const tokens = new Map<string, number>();
  const txs = new Map<string, Tx>();
  const byMoneyId = new Map<string, Tx>();
  const requestLog: SimRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const callbackClient = new HttpClient(8);
  /** ids whose first initiation answered 500 without creating anything */
  const droppedOnce = new Set<string>();
  let tokenCount = 0;
  let moneyCounter = 0;
  let closed = false;
  let enquiryOutage = true;
  const now = opts.now ?? (() => Date.now());
  /** the refunds Airtel made, each its own record: the collection refunded and when */
  const refunds: { tx: Tx; at: number }[] = [];

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed) fn();
    }, ms);
    timers.add(t);
    return t;
  };

  const newMoneyId = (kind: 'collection' | 'disbursement', id: string) => {
    moneyCounter += 1;
    const d = new Date();
    const ymd = d.toISOString().slice(2, 10).replace(/-/g, '');
    const hm = d.toISOString().slice(11, 16).replace(':', '');
    return kind === 'collection'
      ? `MP${ymd}.${hm}.L${String(moneyCounter).padStart(5, '0')}`
      : `disbursement-${randomBytes(5).toString('hex').toUpperCase()}-${id}`;
  };

  // -------------------------------------------------------------------------------------------
  // Callbacks

  async function sendCallback(tx: Tx): Promise<void> {
    const callbackUrl = opts.callbackUrl;
    if (!callbackUrl || tx.kind !== 'collection') return;
    const message =
      tx.status === 'TS'
        ? `Paid ${tx.currency} ${tx.amount}, Trans ID ${tx.airtelMoneyId}.`
        : `Transaction failed (${tx.failCode ?? tx.responseCode}).`;
    const body: Record<string, unknown> = {
      transaction: {
        id: tx.id,
        message,
        status_code: tx.status === 'TS' ? 'TS' : 'TF',
        airtel_money_id: tx.airtelMoneyId,
      },
    };
    if (opts.callbackHashSecret)
      body.hash = callbackHash(opts.callbackHashSecret, body, opts.callbackHashOver ?? 'request');
    tx.callbacksSent += 1;
    try {
      const res = await callbackClient.request(callbackUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: 5_000,
      });
      log(`callback ${tx.id} ${tx.status} -> HTTP ${res.status}`);
    } catch (err) {
      log(`callback ${tx.id} failed: ${(err as Error).message}`);
    }
  }

  function settle(tx: Tx): void {
    if (tx.status !== 'TIP' && tx.status !== 'TA') return;
    if (tx.scenario === 'fail') {
      tx.status = 'TF';
      tx.responseCode = tx.failCode!;
    } else if (tx.scenario === 'expire') {
      tx.status = 'TE';
      tx.responseCode = tx.failCode!;
    } else {
      tx.status = 'TS';
      tx.responseCode = tx.kind === 'collection' ? COLLECTION_STATUS_CODE.TS : DISBURSEMENT_STATUS_CODE.TS;
    }
    tx.completedAt = now();
    if (tx.kind !== 'collection' || tx.status === 'TE' || tx.scenario === 'lost') return;
    if (tx.scenario === 'out-of-order') return; // its callback went before the answer
    later(callbackDelayMs, () => void sendCallback(tx));
    if (tx.scenario === 'callback-twice') later(callbackDelayMs * 2, () => void sendCallback(tx));
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  type Answer = { status: number; body: unknown; delayMs?: number; after?: () => void };

  function refusal(httpCode: number, message: string, resultCode: string, responseCode?: string): Answer {
    return { status: httpCode, body: envelope(httpCode, message, resultCode, responseCode, false) };
  }

  function authorised(headers: http.IncomingHttpHeaders): boolean {
    const m = /^Bearer (\S+)$/.exec(headers.authorization ?? '');
    const expiresAt = m ? tokens.get(m[1]) : undefined;
    return expiresAt !== undefined && Date.now() < expiresAt;
  }

  /** Header and body checks shared by every money request; a refusal, or the parsed body. */
  function validate(
    req: http.IncomingMessage,
    raw: string,
    schema: AirtelSchemaName | null,
    entry: SimRequest,
  ): Answer | { body: Record<string, unknown> } {
    const headerProblems = check('headers', {
      authorization: req.headers.authorization,
      'x-country': req.headers['x-country'],
      'x-currency': req.headers['x-currency'],
    });
    if (!authorised(req.headers)) {
      entry.problems.push(...headerProblems.filter((p) => p.path.includes('authorization')));
      return {
        status: 401,
        body: { error: 'invalid_token', error_description: 'The access token is missing, invalid or expired' },
      };
    }
    if (req.headers['x-country'] !== country) {
      entry.problems.push(...headerProblems);
      return refusal(400, 'Invalid Country Name', 'ESB000034');
    }
    if (!currencies.includes(req.headers['x-currency'] as Currency)) {
      entry.problems.push(...headerProblems);
      return refusal(400, 'Invalid Currency Code', 'ESB000035');
    }
    if (schema === null) return { body: {} };
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      entry.problems.push({ path: '', keyword: 'json', message: 'is not JSON' });
      return refusal(400, 'Field validation: the body is not JSON', 'ESB000008');
    }
    const problems = check(schema, body);
    if (problems.length > 0) {
      entry.problems.push(...problems);
      const p = problems[0];
      if (p.path.endsWith('/msisdn'))
        return refusal(400, 'Invalid MSISDN Length. MSISDN Length should be 9', 'ESB000033');
      return refusal(400, `Field validation: ${p.path || 'body'} ${p.message}`, 'ESB000008');
    }
    const b = body as Record<string, unknown>;
    const t = b.transaction as { amount?: number; currency?: string } | undefined;
    const currency = (t?.currency ?? req.headers['x-currency']) as Currency;
    if (t?.amount !== undefined) {
      const allowed = opts.decimals?.[currency] ?? CURRENCY_EXPONENT[currency];
      const d = decimalsOf(t.amount);
      if (d === undefined || d > allowed) {
        entry.problems.push({
          path: '/transaction/amount',
          keyword: 'decimals',
          message: `must have at most ${allowed} decimals in ${currency}`,
        });
        return refusal(400, `Field validation: amount must have at most ${allowed} decimals`, 'ESB000008');
      }
    }
    const sub = b.subscriber as { country?: string; currency?: string } | undefined;
    const bodyCountry = (t as { country?: string } | undefined)?.country ?? sub?.country;
    if (bodyCountry !== undefined && bodyCountry !== country) return refusal(400, 'Invalid Country Name', 'ESB000034');
    if (
      (t?.currency !== undefined && t.currency !== req.headers['x-currency']) ||
      (sub?.currency !== undefined && sub.currency !== req.headers['x-currency'])
    ) {
      return refusal(400, 'Invalid Currency Code', 'ESB000035');
    }
    return { body: b };
  }

  function token(raw: string, entry: SimRequest): Answer {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const problems = check('tokenRequest', body);
    entry.problems.push(...problems);
    if (problems.length > 0)
      return {
        status: 400,
        body: { error: 'invalid_request', error_description: `${problems[0].path || 'body'} ${problems[0].message}` },
      };
    const b = body as { client_id: string; client_secret: string };
    if (b.client_id !== clientId || b.client_secret !== clientSecret)
      return { status: 401, body: { error: 'invalid_client', error_description: 'Client authentication failed' } };
    tokenCount += 1;
    const accessToken = randomBytes(24).toString('base64url');
    tokens.set(accessToken, Date.now() + lifetimeS * 1000);
    return { status: 200, body: { access_token: accessToken, expires_in: String(lifetimeS), token_type: 'bearer' } };
  }

  function collection(body: Record<string, unknown>): Answer {
    const sub = body.subscriber as { msisdn: string };
    const t = body.transaction as { id: string; amount: number; currency: string };
    const existing = txs.get(t.id);
    if (existing) {
      existing.initiations += 1;
      return refusal(400, 'External Transaction ID already exists', 'ESB000041');
    }
    const rule = SIMULATOR_NUMBERS[sub.msisdn] ?? { scenario: 'success' as const, what: 'succeeds' };
    if (rule.scenario === 'error-500-not-created' && !droppedOnce.has(t.id)) {
      droppedOnce.add(t.id);
      return refusal(500, 'Something went wrong', 'ESB000001');
    }
    const tx = create('collection', t.id, sub.msisdn, t.amount, t.currency, rule);
    const accepted: Answer = {
      status: 200,
      body: envelope(200, 'In process', 'ESB000010', 'DP00800001006', true, {
        transaction: { id: tx.id, status: 'SUCCESS' },
      }),
    };
    switch (rule.scenario) {
      case 'pending-until-asked':
      case 'tip-then-success':
      case 'ta-then-success':
        if (rule.scenario === 'ta-then-success') tx.status = 'TA';
        return accepted;
      case 'out-of-order':
        settle(tx);
        void sendCallback(tx);
        return { ...accepted, delayMs: callbackDelayMs + 200 };
      case 'error-500-created':
        tx.settleTimer = later(finalAfterMs, () => settle(tx));
        return refusal(500, 'Something went wrong', 'ESB000001');
      case 'ambiguous-unnamed':
        tx.status = 'TA';
        return refusal(500, 'Something went wrong', 'ESB000001');
      case 'slow':
        tx.settleTimer = later(finalAfterMs, () => settle(tx));
        return { ...accepted, delayMs: slowMs };
      case 'token-expires':
        tx.settleTimer = later(finalAfterMs, () => settle(tx));
        return { ...accepted, after: () => expireAll() };
      default:
        tx.settleTimer = later(finalAfterMs, () => settle(tx));
        return accepted;
    }
  }

  function create(
    kind: 'collection' | 'disbursement',
    id: string,
    msisdn: string,
    amount: number,
    currency: string,
    rule: NumberRule,
  ): Tx {
    const tx: Tx = {
      id,
      kind,
      msisdn,
      amount: String(amount),
      currency,
      status: 'TIP',
      responseCode: kind === 'collection' ? COLLECTION_STATUS_CODE.TIP : DISBURSEMENT_STATUS_CODE.TIP,
      airtelMoneyId: newMoneyId(kind, id),
      initiations: 1,
      enquiries: 0,
      callbacksSent: 0,
      refunded: false,
      refundRequests: 0,
      scenario: rule.scenario,
      failCode: rule.codes ? rule.codes[kind === 'collection' ? 0 : 1] : null,
      created: Date.now(),
    };
    txs.set(id, tx);
    byMoneyId.set(tx.airtelMoneyId, tx);
    return tx;
  }

  function disbursement(body: Record<string, unknown>, version: 'v1' | 'v2'): Answer {
    const payee = body.payee as { msisdn: string };
    const t = body.transaction as { id: string; amount: number; type?: string };
    const currency = (body as { _currency?: string })._currency!;
    if (version === 'v2' && t.type === undefined)
      return refusal(400, 'Field validation: transaction.type is required', 'ESB000008');
    const pin = decryptPin(body.pin as string, privateKeyPem, padding, opts.pinOaepHash ?? 'sha256');
    if (pin === undefined) return refusal(400, 'Encrypted PIN could not be decrypted', 'ESB000011', 'ROUTER115');
    if (pin !== expectedPin) return refusal(400, 'Incorrect PIN', 'ESB000011', 'ROUTER116');
    const existing = txs.get(t.id);
    if (existing) {
      existing.initiations += 1;
      return refusal(
        400,
        'Duplicate Transaction Id. To know the status of the actual transaction, please do transaction enquiry.',
        'ESB000011',
        'DP00900001017',
      );
    }
    const rule = SIMULATOR_NUMBERS[payee.msisdn] ?? { scenario: 'success' as const, what: 'succeeds' };
    if (rule.scenario === 'error-500-not-created' && !droppedOnce.has(t.id)) {
      droppedOnce.add(t.id);
      return refusal(500, 'Something went wrong', 'ESB000001');
    }
    const tx = create('disbursement', t.id, payee.msisdn, t.amount, currency, rule);
    const data = () => ({
      transaction: {
        reference_id: String(100000 + moneyCounter),
        airtel_money_id: tx.airtelMoneyId,
        id: tx.id,
        status: tx.status,
      },
    });
    switch (rule.scenario) {
      case 'fail':
      case 'expire':
        settle(tx);
        return { status: 200, body: envelope(200, 'Transaction failed', 'ESB000011', tx.responseCode, false, data()) };
      case 'pending-until-asked':
      case 'tip-then-success':
      case 'ta-then-success':
        if (rule.scenario === 'ta-then-success') tx.status = 'TA';
        return {
          status: 200,
          body: envelope(200, 'Transaction is in process', 'ESB000010', DISBURSEMENT_STATUS_CODE.TIP, true, data()),
        };
      case 'error-500-created':
        settle(tx);
        return refusal(500, 'Something went wrong', 'ESB000001');
      case 'ambiguous-unnamed':
        tx.status = 'TA';
        return refusal(500, 'Something went wrong', 'ESB000001');
      case 'slow':
        settle(tx);
        return {
          status: 200,
          body: envelope(200, 'Success', 'ESB000010', tx.responseCode, true, data()),
          delayMs: slowMs,
        };
      case 'token-expires':
        settle(tx);
        return {
          status: 200,
          body: envelope(200, 'Success', 'ESB000010', tx.responseCode, true, data()),
          after: () => expireAll(),
        };
      default:
        settle(tx);
        return { status: 200, body: envelope(200, 'Success', 'ESB000010', tx.responseCode, true, data()) };
    }
  }

  function enquiry(kind: 'collection' | 'disbursement', id: string): Answer {
    const tx = txs.get(id);
    if (!tx || tx.kind !== kind) {
      return refusal(
        404,
        'Transaction Not Found',
        'ESB000045',
        kind === 'collection' ? 'DP00800001025' : 'DP00900001015',
      );
    }
    tx.enquiries += 1;
    if (tx.scenario === 'lost' && enquiryOutage) return refusal(500, 'Something went wrong', 'ESB000001');
    const answer = (): Answer => ({
      status: 200,
      body: envelope(
        200,
        'SUCCESS',
        'ESB000010',
        tx.status === 'TF' || tx.status === 'TE'
          ? tx.responseCode
          : (kind === 'collection' ? COLLECTION_STATUS_CODE : DISBURSEMENT_STATUS_CODE)[tx.status],
        true,
        {
          transaction: {
            // Airtel may name a transaction still pending or ambiguous with airtel_money_id null
            // (shared/providers/airtel/README.md#unclear-points-and-the-choices-made, 11): the ambiguous-unnamed number does
            airtel_money_id: tx.scenario === 'ambiguous-unnamed' && tx.status === 'TA' ? null : tx.airtelMoneyId,
            id: tx.id,
            message: tx.status === 'TS' ? 'success' : tx.status === 'TF' ? 'failed' : 'in progress',
            status: tx.status,
            ...(opts.enquiryEchoesAmount ? { amount: Number(tx.amount), currency: tx.currency } : {}),
          },
        },
      ),
    });
    if (tx.scenario === 'ambiguous-unnamed' && tx.status === 'TA' && tx.enquiries > AMBIGUOUS_ENQUIRIES) settle(tx);
    if (tx.scenario === 'pending-until-asked' && (tx.status === 'TIP' || tx.status === 'TA')) {
      settle(tx);
      return answer();
    }
    if (
      (tx.scenario === 'tip-then-success' || tx.scenario === 'ta-then-success') &&
      (tx.status === 'TIP' || tx.status === 'TA')
    ) {
      const a = answer();
      if (!tx.settleTimer) tx.settleTimer = later(finalAfterMs, () => settle(tx));
      return a;
    }
    return answer();
  }

  function refund(body: Record<string, unknown>): Answer {
    const moneyId = (body.transaction as { airtel_money_id: string }).airtel_money_id;
    const tx = byMoneyId.get(moneyId);
    if (!tx || tx.kind !== 'collection') return refusal(404, 'Transaction Not Found', 'ESB000045', 'DP00800001025');
    tx.refundRequests += 1;
    if (tx.status !== 'TS')
      return refusal(400, 'Refund not allowed: the transaction is not successful', 'ESB000011', 'DP00800001008');
    if (tx.refunded)
      return refusal(400, 'Refund not allowed: the transaction is already refunded', 'ESB000011', 'DP00800001008');
    tx.refunded = true;
    refunds.push({ tx, at: now() });
    const data = { transaction: { airtel_money_id: moneyId, status: 'SUCCESS' } };
    return {
      status: 200,
      body: envelope(200, 'SUCCESS', 'ESB000010', 'DP00800001001', !opts.refundAnswersAsExample, data),
    };
  }

  function expireAll(): void {
    for (const k of tokens.keys()) tokens.set(k, 0);
  }

  function route(req: http.IncomingMessage, raw: string, entry: SimRequest): Answer {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/_sim/transactions') return { status: 200, body: publicTransactions() };
    if (method === 'GET' && path === '/_sim/requests') return { status: 200, body: requestLog };
    if (method === 'POST' && path === '/_sim/expire-tokens') {
      expireAll();
      return { status: 204, body: undefined };
    }
    if (method === 'POST' && path === '/auth/oauth2/token') {
      entry.schema = 'tokenRequest';
      return token(raw, entry);
    }
    const money = (schema: AirtelSchemaName | null, then: (body: Record<string, unknown>) => Answer): Answer => {
      entry.schema = schema;
      const v = validate(req, raw, schema, entry);
      if ('status' in v) return v;
      return then({ ...v.body, _currency: req.headers['x-currency'] });
    };
    if (method === 'POST' && path === '/merchant/v1/payments/') return money('collectionRequest', collection);
    if (method === 'POST' && path === '/standard/v1/payments/refund') return money('refundRequest', refund);
    let m = /^\/standard\/(v1|v2)\/disbursements\/$/.exec(path);
    if (method === 'POST' && m) {
      const version = m[1] as 'v1' | 'v2';
      return money('disbursementRequest', (b) => disbursement(b, version));
    }
    m = /^\/standard\/v1\/payments\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const id = decodeURIComponent(m[1]);
      return money(null, () => enquiry('collection', id));
    }
    m = /^\/standard\/(v1|v2)\/disbursements\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const id = decodeURIComponent(m[2]);
      if (m[1] === 'v2' && url.searchParams.get('transactionType') === null) {
        entry.problems.push({ path: '?transactionType', keyword: 'required', message: 'is required (v2 enquiry)' });
        return refusal(400, 'Field validation: transactionType is required', 'ESB000008');
      }
      return money(null, () => enquiry('disbursement', id));
    }
    return refusal(404, 'No such resource', 'ESB000001');
  }

  function publicTransactions(): SimTransaction[] {
    return [...txs.values()].map(({ scenario: _s, failCode: _f, created: _c, settleTimer: _t, ...pub }) => ({
      ...pub,
    }));
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const entry: SimRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        schema: null,
        problems: [],
        status: 0,
      };
      let answer: Answer;
      try {
        answer = route(req, raw, entry);
      } catch (err) {
        log(`error: ${(err as Error).message}`);
        answer = refusal(500, 'Something went wrong', 'ESB000001');
      }
      entry.status = answer.status;
      if (!req.url?.startsWith('/_sim/')) requestLog.push(entry);
      const write = () => {
        if (res.destroyed) return;
        if (answer.body === undefined) res.writeHead(answer.status).end();
        else res.writeHead(answer.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer.body));
        answer.after?.();
      };
      if (answer.delayMs) later(answer.delayMs, write);
      else write();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${opts.host ?? '127.0.0.1'}:${address.port}`;
  log(`airtel simulator on ${url}`);

  /** Each money movement as its own record, as the report lists them. */
  function records(): ReportRow[] {
    const out: ReportRow[] = [];
    for (const tx of txs.values()) {
      if (tx.completedAt === undefined || (tx.status !== 'TS' && tx.status !== 'TF')) continue;
      out.push({
        at: tx.completedAt,
        transactionId: tx.id,
        airtelMoneyId: tx.airtelMoneyId,
        type: tx.kind === 'collection' ? 'COLLECTION' : 'DISBURSEMENT',
        status: tx.status,
        amount: decimalToMinor(tx.amount, tx.currency as Currency) ?? 0,
        currency: tx.currency as Currency,
        msisdn: tx.msisdn,
      });
    }
    for (const r of refunds)
      out.push({
        at: r.at,
        transactionId: '',
        airtelMoneyId: r.tx.airtelMoneyId,
        type: 'REFUND',
        status: 'TS',
        amount: decimalToMinor(r.tx.amount, r.tx.currency as Currency) ?? 0,
        currency: r.tx.currency as Currency,
        msisdn: r.tx.msisdn,
      });
    return out;
  }
  const finances = airtelReport(records, { feeBps: opts.feeBps ?? 0, now });

  return {
    url,
    publicKeyPem,
    finances,
    endEnquiryOutage: () => {
      enquiryOutage = false;
    },
    transactions: publicTransactions,
    requests: () => requestLog.map((r) => ({ ...r, problems: [...r.problems] })),
    tokenRequests: () => tokenCount,
    expireTokens: expireAll,
    setCallbackUrl: (url: string | null) => {
      opts.callbackUrl = url;
    },
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      callbackClient.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
