import type { KeyObject } from 'node:crypto';
import type { HttpAnswer, HttpClient } from '../../httpClient';
import type { Currency, Direction, Environment, Operator } from '../../vocabulary';
import { decimalsNeeded, CURRENCY_EXPONENT } from '../amounts';
import type {
  AmountRule,
  CallbackAnswer,
  CallbackRequest,
  Capabilities,
  Connector,
  NormalisedCallback,
  OperationRef,
  PayoutRequest,
  PushRequest,
  RefundRequest,
  Verification,
} from '../connector';
import { CallbackFormatError, permanent, retryable } from '../errors';
import { FAILURE_CODES, type FailureCode } from '../failureCodes';
import type { EchoedAmount, ProviderAccepted, ProviderStatus } from '../types';
import { hashMatches, type CallbackHashOver } from './callbackHash';
import { classify, meaningOf, type CodeClass } from './codes';
import { encryptPin, publicKeyOf, type OaepHash, type PinPadding } from './pin';
import { check, type AirtelSchemaName } from './schema';
import { expiresInSeconds, TokenCache } from './token';
import {
  amountFromWire,
  amountOnWire,
  digest,
  fromAirtelId,
  nationalMsisdn,
  referenceOf,
  toAirtelId,
  writeJson,
  type IdFormat,
} from './wire';

/**
 * The Airtel Money Africa Open API connector (https://developers.airtel.africa/documentation),
 * for a merchant with a direct Airtel contract in the DRC: USSD-push collections, full refunds,
 * disbursements (payouts), transaction enquiries, and collection callbacks with their `hash`.
 * Design choices and the reference's unclear points: ./README.md.
 */

export interface AirtelLog {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface AirtelConnectorOptions {
  /** our name of it: the payment's `provider` and the {provider} of /callbacks/{provider} (default 'airtel') */
  id?: string;
  environment: Environment;
  /** https://openapi.airtel.africa (production), https://openapiuat.airtel.africa (Airtel's sandbox), or a simulator */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** X-Country and the body's country (default 'CD') */
  country?: string;
  /** currencies the account takes (default USD and CDF) */
  currencies?: Currency[];
  /** per currency: decimals taken and min/max in minor units (defaults: AIRTEL_AMOUNT_DEFAULTS) */
  amountRules?: Partial<Record<Currency, Partial<AmountRule>>>;
  /** payouts: the disbursement PIN (4 digits) and Airtel's RSA public key (PEM, or bare base64 DER); without both, no payouts */
  disbursementPin?: string;
  pinPublicKeyPem?: string;
  /** padding of the PIN encryption: follows the key's version (v1: 'pkcs1', v2: 'oaep'); default from disbursementVersion */
  pinPadding?: PinPadding;
  /** OAEP's hash (default sha256: "OAEPWithSHA-256AndMGF1Padding") */
  pinOaepHash?: OaepHash;
  /** disbursement API version: v1 (payee.msisdn only) or v2 (wallet_type, transaction.type) (default 'v2') */
  disbursementVersion?: 'v1' | 'v2';
  /** when set, callback authentication is on: a callback must carry a valid `hash` (else 401); unset: callbacks are `unsigned` */
  callbackHashSecret?: string;
  /** which bytes the callback hash covers (default 'request'; ./README.md#unclear-points-and-the-choices-made, point 1) */
  callbackHashOver?: CallbackHashOver;
  /** how our ids appear as transaction.id (default 'compact') */
  idFormat?: IdFormat;
  /** one HTTP call, connection to last byte (default 10 000 ms) */
  timeoutMs?: number;
  /** a token is refreshed this long before it expires (default 30 000 ms; never in its first half-life) */
  tokenMarginMs?: number;
  client: HttpClient;
  log?: AirtelLog;
  /** the clock (ms), for token expiry */
  now?: () => number;
}

/**
 * Amount rules unless configured, in minor units. Airtel's reference publishes no limits (they
 * are per contract and per wallet tier): these are conservative placeholders, to be set from the
 * merchant's contract (AIRTEL_USD_MIN, AIRTEL_USD_MAX, AIRTEL_CDF_MIN, AIRTEL_CDF_MAX: docs/settings.md).
 * Decimals: the currency's exponent (USD 2, CDF 2).
 */
export const AIRTEL_AMOUNT_DEFAULTS: Record<Currency, AmountRule> = {
  USD: { decimals: 2, min: 10, max: 250_000 },
  CDF: { decimals: 2, min: 10_000, max: 700_000_000 },
};

/** A request the connector sends, as the contract tests see it. */
interface Sent {
  method: 'GET' | 'POST';
  path: string;
  schema?: AirtelSchemaName;
  body?: string;
  currency: Currency;
}

/** What an HTTP exchange gave: an answer (maybe unparsable), or none (timeout, network). */
type Exchange = { answered: true; status: number; json: unknown } | { answered: false; why: string };

/** What an initiation's answer means. */
type Initiation =
  | { is: 'accepted'; airtelMoneyId: string | null; status: string | null }
  | { is: 'refused'; code: string; failureCode: FailureCode }
  | { is: 'duplicate' }
  | { is: 'unknown'; why: string }
  | { is: 'auth'; code: string };

/** What an enquiry found. */
type Enquiry =
  | { found: false }
  | { found: true; status: string; airtelMoneyId: string | null; responseCode: string | null; echoed: EchoedAmount };

const UNKNOWN = 'provider-unknown-outcome';

interface Status {
  success?: unknown;
  response_code?: unknown;
  result_code?: unknown;
  code?: unknown;
}

const statusOf = (json: unknown): Status => (json as { status?: Status } | null)?.status ?? {};
const txOf = (json: unknown): Record<string, unknown> | undefined => {
  const t = (json as { data?: { transaction?: unknown } } | null)?.data?.transaction;
  return t && typeof t === 'object' ? (t as Record<string, unknown>) : undefined;
};
const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : null);

export class AirtelConnector implements Connector {
  readonly id: string;
  readonly connector = 'airtel' as const;
  readonly environment: Environment;
  readonly capabilities: Capabilities;

  private readonly country: string;
  private readonly currencies: Currency[];
  private readonly rules: Record<Currency, AmountRule>;
  private readonly tokens: TokenCache;
  private readonly timeoutMs: number;
  private readonly idFormat: IdFormat;
  private readonly disbursementVersion: 'v1' | 'v2';
  private readonly pinKey: KeyObject | undefined;
  private readonly pinPadding: PinPadding;
  private readonly hashOver: CallbackHashOver;
  private readonly now: () => number;

  constructor(private readonly opts: AirtelConnectorOptions) {
    this.id = opts.id ?? 'airtel';
    this.environment = opts.environment;
    this.country = opts.country ?? 'CD';
    this.currencies = opts.currencies ?? ['USD', 'CDF'];
    this.rules = { ...AIRTEL_AMOUNT_DEFAULTS };
    for (const c of Object.keys(opts.amountRules ?? {}) as Currency[]) {
      const rule = { ...AIRTEL_AMOUNT_DEFAULTS[c], ...opts.amountRules![c] };
      if (!Number.isInteger(rule.decimals) || rule.decimals < 0 || rule.decimals > CURRENCY_EXPONENT[c]) {
        throw new RangeError(`airtel: ${c} decimals must be 0 to ${CURRENCY_EXPONENT[c]}`);
      }
      if (rule.min !== null && rule.max !== null && rule.min > rule.max)
        throw new RangeError(`airtel: the ${c} minimum ${rule.min} is above the maximum ${rule.max}`);
      this.rules[c] = rule;
    }
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.idFormat = opts.idFormat ?? 'compact';
    this.disbursementVersion = opts.disbursementVersion ?? 'v2';
    this.pinPadding = opts.pinPadding ?? (this.disbursementVersion === 'v1' ? 'pkcs1' : 'oaep');
    this.hashOver = opts.callbackHashOver ?? 'request';
    this.now = opts.now ?? Date.now;
    if ((opts.disbursementPin === undefined) !== (opts.pinPublicKeyPem === undefined)) {
      throw new RangeError('airtel: payouts need both the disbursement PIN and the PIN public key');
    }
    if (opts.disbursementPin !== undefined && !/^\d{4,6}$/.test(opts.disbursementPin))
      throw new RangeError('airtel: the disbursement PIN must be 4 to 6 digits');
    this.pinKey = opts.pinPublicKeyPem ? publicKeyOf(opts.pinPublicKeyPem) : undefined;
    this.tokens = new TokenCache(() => this.fetchToken(), this.now, opts.tokenMarginMs ?? 30_000);

    const directions: Direction[] = this.pinKey ? ['collection', 'refund', 'payout'] : ['collection', 'refund'];
    const rules = this.rules;
    const currencies = this.currencies;
    this.capabilities = {
      operators: ['airtel'],
      directions,
      partialRefunds: false,
      amountRule(operator: Operator, currency: Currency, direction: Direction): AmountRule | undefined {
        if (operator !== 'airtel' || !currencies.includes(currency) || !directions.includes(direction))
          return undefined;
        return { ...rules[currency] };
      },
    };
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  async push(req: PushRequest): Promise<ProviderAccepted> {
    this.checkTransfer(req.operator, req.amount, req.currency, 'collection');
    const airtelId = toAirtelId(req.paymentId, this.idFormat);
    const national = nationalMsisdn(req.msisdn);
    const body = writeJson({
      reference: referenceOf(req.description, airtelId),
      subscriber: { country: this.country, currency: req.currency, msisdn: national },
      transaction: {
        amount: amountOnWire(req.amount, req.currency),
        country: this.country,
        currency: req.currency,
        id: airtelId,
      },
    });
    const sent: Sent = {
      method: 'POST',
      path: '/merchant/v1/payments/',
      schema: 'collectionRequest',
      body,
      currency: req.currency,
    };
    return this.initiate('payment', airtelId, sent, () => this.enquire('payment', airtelId, req.currency));
  }

  async payout(req: PayoutRequest): Promise<ProviderAccepted> {
    if (!this.pinKey || this.opts.disbursementPin === undefined)
      throw permanent('provider-refused', 'Airtel payouts are not configured (no disbursement PIN and key)');
    this.checkTransfer(req.operator, req.amount, req.currency, 'payout');
    const airtelId = toAirtelId(req.payoutId, this.idFormat);
    const v2 = this.disbursementVersion === 'v2';
    const body = writeJson({
      payee: v2
        ? { msisdn: nationalMsisdn(req.msisdn), wallet_type: 'NORMAL' }
        : { msisdn: nationalMsisdn(req.msisdn) },
      reference: referenceOf(req.description, airtelId),
      // a fresh encryption per request (OAEP and PKCS#1 v1.5 are randomised): never logged, never in an error
      pin: encryptPin(this.opts.disbursementPin, this.pinKey, this.pinPadding, this.opts.pinOaepHash ?? 'sha256'),
      transaction: v2
        ? { amount: amountOnWire(req.amount, req.currency), id: airtelId, type: 'B2C' }
        : { amount: amountOnWire(req.amount, req.currency), id: airtelId },
    });
    const sent: Sent = {
      method: 'POST',
      path: `/standard/${this.disbursementVersion}/disbursements/`,
      schema: 'disbursementRequest',
      body,
      currency: req.currency,
    };
    return this.initiate('payout', airtelId, sent, () => this.enquire('payout', airtelId, req.currency));
  }

  /**
   * A full refund, named by Airtel's id of the collection (`airtel_money_id`). The payment's
   * provider reference is that id once a callback or an enquiry told it; before, the collection
   * is asked for it. Airtel has no refund enquiry: see
   * shared/providers/airtel/README.md#unclear-points-and-the-choices-made, point 4.
   */
  async refund(req: RefundRequest): Promise<ProviderAccepted> {
    if (req.operator !== 'airtel') throw permanent('provider-refused', `Airtel does not serve ${req.operator}`);
    if (req.amount !== req.paymentAmount) throw permanent('provider-refused', 'Airtel refunds a payment only in full');
    let moneyId = req.paymentProviderRef && !fromAirtelId(req.paymentProviderRef) ? req.paymentProviderRef : null;
    if (!moneyId) {
      const e = await this.enquire('payment', toAirtelId(req.paymentId, this.idFormat), req.currency);
      if (!e.found) throw permanent('provider-refused', 'Airtel does not know the payment refunded');
      if (e.status !== 'TS')
        throw (e.status === 'TF' || e.status === 'TE' ? permanent : retryable)(
          'provider-refused',
          `the payment refunded is not successful at Airtel (${e.status})`,
        );
      if (!e.airtelMoneyId) throw retryable(UNKNOWN, 'Airtel did not give the Airtel Money id of the payment refunded');
      moneyId = e.airtelMoneyId;
    }
    const sent: Sent = {
      method: 'POST',
      path: '/standard/v1/payments/refund',
      schema: 'refundRequest',
      body: writeJson({ transaction: { airtel_money_id: moneyId } }),
      currency: req.currency,
    };
    const x = await this.exchange(sent);
    const r = this.interpretRefund(x);
    if (r.is === 'accepted') return { providerRef: `refund-of:${moneyId}` };
    // Airtel refunds a collection once, and its refusal of a refund does not say whether an earlier
    // request (whose answer we lost: a crash, a timeout) already refunded it: never final, the
    // refund stays open and is listed in GET /admin/attention after an hour (./README.md#unclear-points-and-the-choices-made, point 4)
    if (r.is === 'refused')
      throw retryable(
        'provider-refused',
        this.describe(r.code, 'Airtel refused the refund; it may have refunded this collection already'),
      );
    if (r.is === 'auth') throw retryable('provider-auth', this.describe(r.code, 'Airtel refused our credentials'));
    // no refund enquiry exists: the kernel tries again later with the same airtel_money_id
    throw retryable(UNKNOWN, `the refund's outcome is unknown (${r.is === 'unknown' ? r.why : 'duplicate'})`);
  }

  // -------------------------------------------------------------------------------------------
  // Status

  async ask(op: OperationRef): Promise<ProviderStatus & EchoedAmount> {
    if (op.kind === 'refund') {
      // a refund is final when Airtel answers it (no callback, no enquiry): a stored provider
      // reference means Airtel said SUCCESS; none means the outcome was never known
      return op.providerRef
        ? { state: 'succeeded', providerRef: op.providerRef }
        : { state: 'pending', providerRef: null };
    }
    if (op.kind !== 'payment' && op.kind !== 'payout') return { state: 'not_found' };
    const e = await this.enquire(op.kind, toAirtelId(op.id, this.idFormat), op.currency);
    if (!e.found) return { state: 'not_found' };
    return { ...this.statusOf(e), ...e.echoed };
  }

  private statusOf(e: Extract<Enquiry, { found: true }>): ProviderStatus {
    const providerRef = e.airtelMoneyId;
    switch (e.status) {
      case 'TS':
        return { state: 'succeeded', providerRef };
      case 'TE':
        return { state: 'expired', providerRef };
      case 'TF': {
        const c = e.responseCode ? classify(e.responseCode, undefined) : undefined;
        const failureCode: FailureCode = c?.class === 'failed' ? c.failureCode : 'provider-failed';
        return { state: 'failed', providerRef, failureCode, failureMessage: FAILURE_CODES[failureCode] };
      }
      default:
        // TIP, TA, and any status this connector does not know keep the operation open
        return { state: 'pending', providerRef };
    }
  }

  // -------------------------------------------------------------------------------------------
  // Callbacks

  async verifyCallback(req: CallbackRequest): Promise<Verification> {
    const secret = this.opts.callbackHashSecret;
    if (!secret) return 'unsigned';
    let body: unknown;
    try {
      body = JSON.parse(req.raw.toString('utf8'));
    } catch {
      return 'invalid';
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return 'invalid';
    const b = body as Record<string, unknown>;
    const header = req.headers['hash'];
    const received = typeof b.hash === 'string' ? b.hash : typeof header === 'string' ? header : undefined;
    if (!received) return 'invalid';
    return hashMatches(secret, b, received, this.hashOver) ? 'verified' : 'invalid';
  }

  parseCallback(raw: Buffer, _headers?: CallbackRequest['headers']): NormalisedCallback | 'ignore' {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new CallbackFormatError('the callback is not JSON', true);
    }
    const problems = check('callback', body);
    if (problems.length > 0)
      throw new CallbackFormatError(
        `the callback breaks Airtel's schema at ${problems[0].path || 'the body'}: ${problems[0].message}`,
      );
    const t = (body as { transaction: { id: string; status_code: 'TS' | 'TF'; airtel_money_id?: string } }).transaction;
    const ours = fromAirtelId(t.id);
    if (!ours) throw new CallbackFormatError('the callback names a transaction id that is not one of ours');
    const providerRef = str(t.airtel_money_id);
    const base = {
      eventId: digest('airtel', t.id, t.status_code, providerRef ?? ''),
      kind: ours.kind,
      objectId: ours.id,
      providerRef,
      amount: null,
      currency: null,
    };
    if (t.status_code === 'TS') return { ...base, status: 'succeeded', failureCode: null, failureMessage: null };
    // a failed callback carries Airtel's free text only (it may hold a phone number): not kept
    return {
      ...base,
      status: 'failed',
      failureCode: 'provider-failed',
      failureMessage: FAILURE_CODES['provider-failed'],
    };
  }

  /** Airtel expects a 200; it sends a callback again otherwise. */
  callbackAnswer(): CallbackAnswer {
    return { status: 200 };
  }

  close(): void {
    this.tokens.clear();
  }

  // -------------------------------------------------------------------------------------------
  // Initiation: never charge twice, never guess

  /**
   * Sends an initiation; on an unknown outcome or a duplicate-id refusal it asks first: found →
   * follow it; not found after an unknown outcome → send again with the same id, once; still
   * unknown → a retryable error (the kernel asks again later). A definite refusal is permanent.
   */
  private async initiate(
    kind: 'payment' | 'payout',
    airtelId: string,
    sent: Sent,
    enquire: () => Promise<Enquiry>,
  ): Promise<ProviderAccepted> {
    const first = this.interpretInitiation(await this.exchange(sent));
    const settled = this.settle(first, airtelId);
    if (settled) return settled;
    this.opts.log?.warn(
      { connector: this.id, kind, transaction: airtelId, outcome: first.is },
      'airtel initiation not definite: asking first',
    );
    const e = await enquire();
    if (e.found) return this.follow(e, airtelId);
    if (first.is === 'duplicate')
      throw retryable(UNKNOWN, 'Airtel has this transaction id but its enquiry does not find it yet');
    const second = this.interpretInitiation(await this.exchange(sent));
    const settled2 = this.settle(second, airtelId);
    if (settled2) return settled2;
    if (second.is === 'duplicate') {
      const again = await enquire();
      if (again.found) return this.follow(again, airtelId);
    }
    throw retryable(UNKNOWN, `Airtel's answer to ${kind} ${airtelId} is still unknown after an enquiry`);
  }

  /** The initiation's result when it is definite (accepted: returned; refused: thrown); undefined: ask. */
  private settle(r: Initiation, airtelId: string): ProviderAccepted | undefined {
    if (r.is === 'accepted') {
      if (r.status === 'TF') throw permanent('provider-failed', FAILURE_CODES['provider-failed']);
      return { providerRef: r.airtelMoneyId ?? airtelId };
    }
    if (r.is === 'refused') throw permanent(r.failureCode, this.describe(r.code, FAILURE_CODES[r.failureCode]));
    if (r.is === 'auth')
      throw retryable('provider-auth', this.describe(r.code, 'Airtel refused our credentials or signature'));
    return undefined;
  }

  /** What an enquiry found decides: failed and expired are definite; anything else was taken. */
  private follow(e: Extract<Enquiry, { found: true }>, airtelId: string): ProviderAccepted {
    const s = this.statusOf(e);
    if (s.state === 'failed' || s.state === 'cancelled') throw permanent(s.failureCode, s.failureMessage);
    if (s.state === 'expired') throw permanent('client-timeout', FAILURE_CODES['client-timeout']);
    return { providerRef: e.airtelMoneyId ?? airtelId };
  }

  private interpretInitiation(x: Exchange): Initiation {
    if (!x.answered) return { is: 'unknown', why: x.why };
    if (x.status >= 500) return { is: 'unknown', why: `HTTP ${x.status}` };
    if (x.json === undefined || check('answer', x.json).length > 0)
      return { is: 'unknown', why: `unparsable answer (HTTP ${x.status})` };
    const s = statusOf(x.json);
    const code = str(s.response_code) ?? str(s.result_code) ?? `http-${x.status}`;
    const c: CodeClass | undefined = classify(s.response_code, s.result_code);
    const t = txOf(x.json);
    const txStatus = str(t?.status);
    if (c?.class === 'duplicate') return { is: 'duplicate' };
    if (c?.class === 'unknown' || c?.class === 'not_found') return { is: 'unknown', why: code };
    if (c?.class === 'auth') return { is: 'auth', code };
    if (c?.class === 'failed') return { is: 'refused', code, failureCode: c.failureCode };
    if (x.status >= 200 && x.status < 300 && s.success === true) {
      return { is: 'accepted', airtelMoneyId: str(t?.airtel_money_id), status: txStatus };
    }
    if (x.status >= 400 && x.status < 500 && s.success === false)
      return { is: 'refused', code, failureCode: 'provider-refused' };
    return { is: 'unknown', why: `${code} with success ${String(s.success)}` };
  }

  /**
   * The reference's own refund example answers `transaction.status: "SUCCESS"` beside `success:
   * false`: the transaction's status decides when present
   * (./README.md#unclear-points-and-the-choices-made, point 4).
   */
  private interpretRefund(x: Exchange): Initiation {
    if (x.answered && x.status < 500 && x.json !== undefined && check('answer', x.json).length === 0) {
      const txStatus = str(txOf(x.json)?.status);
      if (txStatus === 'SUCCESS' || txStatus === 'TS')
        return { is: 'accepted', airtelMoneyId: str(txOf(x.json)?.airtel_money_id), status: txStatus };
      if (txStatus === 'FAILED' || txStatus === 'TF') {
        const s = statusOf(x.json);
        const c = classify(s.response_code, s.result_code);
        return {
          is: 'refused',
          code: str(s.response_code) ?? str(s.result_code) ?? 'FAILED',
          failureCode: c?.class === 'failed' ? c.failureCode : 'provider-refused',
        };
      }
    }
    return this.interpretInitiation(x);
  }

  private async enquire(kind: 'payment' | 'payout', airtelId: string, currency: Currency): Promise<Enquiry> {
    const path =
      kind === 'payment'
        ? `/standard/v1/payments/${encodeURIComponent(airtelId)}`
        : `/standard/${this.disbursementVersion}/disbursements/${encodeURIComponent(airtelId)}${this.disbursementVersion === 'v2' ? '?transactionType=B2C' : ''}`;
    const x = await this.exchange({ method: 'GET', path, currency });
    if (!x.answered) throw retryable(UNKNOWN, `Airtel's enquiry got no answer (${x.why})`);
    if (x.status >= 500) throw retryable(UNKNOWN, `Airtel's enquiry answered HTTP ${x.status}`);
    if (x.json === undefined || check('answer', x.json).length > 0)
      throw retryable(UNKNOWN, `Airtel's enquiry answer is unparsable (HTTP ${x.status})`);
    const s = statusOf(x.json);
    const c = classify(s.response_code, s.result_code);
    if (c?.class === 'not_found') return { found: false };
    const t = txOf(x.json);
    if (t && typeof t.status === 'string' && t.status.length > 0 && check('enquiryResponse', x.json).length === 0) {
      const echoed: EchoedAmount = {};
      const amount = t.amount === undefined ? undefined : amountFromWire(t.amount, currency);
      if (amount !== undefined) echoed.amount = amount;
      if (t.currency === 'USD' || t.currency === 'CDF') echoed.currency = t.currency;
      return {
        found: true,
        status: t.status,
        airtelMoneyId: str(t.airtel_money_id),
        responseCode: str(s.response_code),
        echoed,
      };
    }
    if (c?.class === 'auth')
      throw retryable('provider-auth', this.describe(str(s.response_code) ?? '', 'Airtel refused our credentials'));
    throw retryable(UNKNOWN, `Airtel's enquiry answer says nothing definite (HTTP ${x.status})`);
  }

  // -------------------------------------------------------------------------------------------
  // HTTP

  /** One authenticated call; a 401 refreshes the token once and sends again once. */
  private async exchange(sent: Sent): Promise<Exchange> {
    if (sent.schema && sent.body !== undefined) {
      const problems = check(sent.schema, JSON.parse(sent.body));
      if (problems.length > 0)
        throw permanent(
          'provider-contract',
          `request breaks Airtel's contract at ${problems[0].path}: ${problems[0].message}`,
        );
    }
    let token = await this.tokens.get();
    let x = await this.send(sent, token);
    if (x.answered && x.status === 401) {
      token = await this.tokens.replace(token);
      x = await this.send(sent, token);
      if (x.answered && x.status === 401) throw retryable('provider-auth', 'Airtel refused a fresh token (HTTP 401)');
    }
    return x;
  }

  private async send(sent: Sent, token: string): Promise<Exchange> {
    const headers: Record<string, string> = {
      Accept: '*/*',
      'X-Country': this.country,
      'X-Currency': sent.currency,
      Authorization: `Bearer ${token}`,
    };
    if (sent.body !== undefined) headers['Content-Type'] = 'application/json';
    let res: HttpAnswer;
    try {
      res = await this.opts.client.request(this.opts.baseUrl.replace(/\/+$/, '') + sent.path, {
        method: sent.method,
        headers,
        body: sent.body,
        timeoutMs: this.timeoutMs,
      });
    } catch (err) {
      return {
        answered: false,
        why: (err as Error).name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : 'unreachable',
      };
    }
    if (res.status >= 300 && res.status < 400) return { answered: false, why: `redirected (HTTP ${res.status})` };
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      json = undefined;
    }
    return { answered: true, status: res.status, json };
  }

  private async fetchToken(): Promise<{ accessToken: string; expiresInS: number }> {
    const body = JSON.stringify({
      client_id: this.opts.clientId,
      client_secret: this.opts.clientSecret,
      grant_type: 'client_credentials',
    });
    let res: HttpAnswer;
    try {
      res = await this.opts.client.request(`${this.opts.baseUrl.replace(/\/+$/, '')}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: '*/*' },
        body,
        timeoutMs: this.timeoutMs,
      });
    } catch (err) {
      throw retryable(
        (err as Error).name === 'TimeoutError' ? 'provider-timeout' : 'provider-unreachable',
        `Airtel's token endpoint did not answer`,
      );
    }
    if (res.status === 400 || res.status === 401 || res.status === 403)
      throw retryable('provider-auth', `Airtel refused our client credentials (HTTP ${res.status})`);
    if (res.status < 200 || res.status >= 300)
      throw retryable('provider-unreachable', `Airtel's token endpoint answered HTTP ${res.status}`);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw retryable('provider-protocol', `Airtel's token answer is not JSON`);
    }
    if (check('tokenResponse', json).length > 0)
      throw retryable('provider-protocol', `Airtel's token answer breaks its schema`);
    const t = json as { access_token: string; expires_in: unknown };
    const expiresInS = expiresInSeconds(t.expires_in);
    if (expiresInS === undefined)
      throw retryable('provider-protocol', `Airtel's token answer has no usable expires_in`);
    this.opts.log?.info({ connector: this.id, expiresInS }, 'airtel token fetched');
    return { accessToken: t.access_token, expiresInS };
  }

  // -------------------------------------------------------------------------------------------

  /** Refuses before anything is sent what this account cannot carry (the kernel refuses it earlier, at creation). */
  private checkTransfer(operator: Operator, amount: number, currency: Currency, direction: Direction): void {
    const rule = this.capabilities.amountRule(operator, currency, direction);
    if (!rule)
      throw permanent(
        'provider-refused',
        `Airtel does not carry ${operator} ${currency} ${direction}s on this account`,
      );
    if (!Number.isSafeInteger(amount) || amount <= 0)
      throw permanent('amount-out-of-bounds', 'the amount is not a positive number of minor units');
    if (decimalsNeeded(amount, currency) > rule.decimals)
      throw permanent('amount-out-of-bounds', `Airtel takes ${rule.decimals} decimals in ${currency}`);
    if ((rule.min !== null && amount < rule.min) || (rule.max !== null && amount > rule.max)) {
      throw permanent(
        'amount-out-of-bounds',
        `the amount is outside Airtel's ${currency} limits (${rule.min}..${rule.max} minor units)`,
      );
    }
  }

  /** A message from a code's documented meaning, never from an answer's free text. */
  private describe(code: string, fallback: string): string {
    const meaning = meaningOf(code);
    return meaning ? `${meaning} (${code})` : `${fallback} (${code})`;
  }
}
