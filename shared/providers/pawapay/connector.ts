import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Currency, Direction, Environment, Operator } from '../../vocabulary';
import type { HttpAnswer, HttpClient } from '../../httpClient';
import { CURRENCY_EXPONENT, decimalsNeeded, minorToDecimal } from '../amounts';
import type {
  AmountRule,
  CallbackAnswer,
  CallbackRequest,
  Capabilities,
  Connector,
  NormalisedCallback,
  OperationRef,
  PayoutRequest,
  ProviderAvailability,
  PushRequest,
  RefundRequest,
  Verification,
} from '../connector';
import { CallbackFormatError, ProviderError, permanent, retryable } from '../errors';
import type { EchoedAmount, ProviderAccepted, ProviderStatus } from '../types';
import { defaultRules, parseActiveConf, parseAvailability, ruleKey, type AmountRules } from './activeConf';
import { checkContract, describeErrors } from './contract';
import { verifySignedMessage } from './signatures';
import {
  CREDENTIAL_CODES,
  FINAL_STATUSES,
  KINDS,
  PROVIDER_OF,
  SERVED_OPERATORS,
  UNKNOWN_OUTCOME_CODES,
  callbackEventId,
  fromPawapayAmount,
  isUuidV4,
  mapFailure,
  maskPhone,
  ourCurrency,
  ourId,
  pawapayId,
  pawapayPhone,
  type KindWire,
} from './wire';

/** What the connector logs through (pino's signature); nothing secret is ever passed to it. */
export interface ConnectorLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface PawapayConnectorOptions {
  /** our name of it: a payment's `provider` and /callbacks/{id}; default 'pawapay' */
  id?: string;
  environment: Environment;
  /** https://api.pawapay.io (production), https://api.sandbox.pawapay.io, or a simulator; no trailing slash needed */
  baseUrl: string;
  /** the API token (Bearer): never logged, never in an error message */
  apiToken: string;
  /** 'required': callbacks must carry a valid RFC 9421 signature; 'off': the account sends none, the kernel confirms by status query */
  callbackSignatures: 'required' | 'off';
  /**
   * The callback URL registered with pawaPay: pawaPay signs its @authority and @path as it sent them,
   * which a proxy in front of us may rewrite. Default: http://{Host header}/callbacks/{id}.
   */
  callbackUrl?: string;
  /** per HTTP call */
  timeoutMs: number;
  client: HttpClient;
  log?: ConnectorLog;
  /** clock of the cache timings (ms); default Date.now */
  now?: () => number;
  /** active-conf refresh period; 0 disables the timer (refreshActiveConf() still works). Default 10 min. */
  activeConfRefreshMs?: number;
  /** how long an availability answer is reused. Default 60 s. */
  availabilityTtlMs?: number;
  /** the least time between two fetches of the public keys caused by an unknown keyid. Default 60 s. */
  keyRefetchMinMs?: number;
  /** how far a callback signature's `created` may be from the service clock. Default 300 s. */
  callbackMaxSkewSec?: number;
  /**
   * Amount strings we send: 'minimal' (default: "100.5", "100", what v2's pattern asks) or 'fixed'
   * (the currency's every decimal, "100.50", which the v1 reference allows): ./README.md#where-the-reference-is-unclear-the-choice-made, point 1.
   */
  amountFormat?: 'minimal' | 'fixed';
}

type SendOutcome = { kind: 'accepted' } | { kind: 'unknown'; why: string };
type Lookup =
  { kind: 'found'; data: Record<string, unknown> } | { kind: 'not_found' } | { kind: 'unknown'; why: string };

const SERVED_DIRECTIONS: Direction[] = ['collection', 'refund', 'payout'];
const JSON_HEADERS = { Accept: 'application/json' };

/**
 * The pawaPay Merchant API v2 connector (README.md in this folder): deposits, payouts and refunds
 * for VODACOM_MPESA_COD, AIRTEL_COD and ORANGE_COD with one account and one callback URL.
 */
export class PawapayConnector implements Connector {
  readonly id: string;
  readonly connector = 'pawapay' as const;
  readonly environment: Environment;
  readonly capabilities: Capabilities;

  private rules: AmountRules = defaultRules();
  private activeConfLoaded = false;
  private refreshTimer: NodeJS.Timeout | null = null;
  private availabilityCache: { at: number; value: ProviderAvailability } | null = null;
  private keys = new Map<string, KeyObject>();
  private keysFetchedAt = -Infinity;
  private keysInFlight: Promise<void> | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: PawapayConnectorOptions) {
    this.id = opts.id ?? 'pawapay';
    this.environment = opts.environment;
    this.now = opts.now ?? Date.now;
    const rules = () => this.rules;
    this.capabilities = {
      operators: SERVED_OPERATORS,
      directions: SERVED_DIRECTIONS,
      partialRefunds: true,
      amountRule: (operator: Operator, currency: Currency, direction: Direction): AmountRule | undefined =>
        rules().get(ruleKey(operator, currency, direction)),
    };
    const period = opts.activeConfRefreshMs ?? 10 * 60_000;
    if (period > 0) {
      void this.refreshActiveConf();
      this.refreshTimer = setInterval(() => void this.refreshActiveConf(), period);
      this.refreshTimer.unref();
    }
  }

  /** Whether the amount rules come from pawaPay's active-conf yet (else the documented defaults). */
  get activeConfReady(): boolean {
    return this.activeConfLoaded;
  }

  close(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = null;
  }

  // ---- requests -------------------------------------------------------------------------------

  async push(req: PushRequest): Promise<ProviderAccepted> {
    const wire = KINDS.payment;
    const uuid = this.uuidOf(req.paymentId, wire);
    const provider = this.providerOf(req.operator);
    this.checkAmount(req.operator, req.amount, req.currency, 'collection');
    const body: Record<string, unknown> = {
      depositId: uuid,
      payer: { type: 'MMO', accountDetails: { phoneNumber: this.phoneOf(req.msisdn), provider } },
      amount: this.amountText(req.amount, req.currency),
      currency: req.currency,
    };
    const message = customerMessage(req.description);
    if (message) body.customerMessage = message;
    return this.initiate(wire, uuid, body, req.msisdn);
  }

  async payout(req: PayoutRequest): Promise<ProviderAccepted> {
    const wire = KINDS.payout;
    const uuid = this.uuidOf(req.payoutId, wire);
    const provider = this.providerOf(req.operator);
    this.checkAmount(req.operator, req.amount, req.currency, 'payout');
    const body: Record<string, unknown> = {
      payoutId: uuid,
      recipient: { type: 'MMO', accountDetails: { phoneNumber: this.phoneOf(req.msisdn), provider } },
      amount: this.amountText(req.amount, req.currency),
      currency: req.currency,
    };
    const message = customerMessage(req.description);
    if (message) body.customerMessage = message;
    return this.initiate(wire, uuid, body, req.msisdn);
  }

  async refund(req: RefundRequest): Promise<ProviderAccepted> {
    const wire = KINDS.refund;
    const uuid = this.uuidOf(req.refundId, wire);
    this.providerOf(req.operator);
    // the refunded deposit: the reference stored for the payment (its depositId), else its id's UUID
    const depositId =
      req.paymentProviderRef && isUuidV4(req.paymentProviderRef)
        ? req.paymentProviderRef
        : this.uuidOf(req.paymentId, KINDS.payment);
    if (req.amount > req.paymentAmount)
      throw permanent(
        'amount-not-supported',
        `${this.id}: a refund of ${req.amount} is more than the payment's ${req.paymentAmount}`,
      );
    this.checkAmount(req.operator, req.amount, req.currency, 'refund');
    const body = {
      refundId: uuid,
      depositId,
      amount: this.amountText(req.amount, req.currency),
      currency: req.currency,
    };
    return this.initiate(wire, uuid, body, req.msisdn);
  }

  /**
   * Sends an initiation; an unknown outcome (timeout, 5xx, UNKNOWN_ERROR, an unparsable answer)
   * is never a failure: the status endpoint decides (found: accepted; not found: the same request
   * again, idempotent at pawaPay by its id; still unknown: a retryable error).
   */
  private async initiate(
    wire: KindWire,
    uuid: string,
    body: Record<string, unknown>,
    msisdn: string,
  ): Promise<ProviderAccepted> {
    const accepted = { providerRef: uuid };
    this.opts.log?.info(
      { connector: this.id, kind: wire.kind, id: ourId(uuid, wire), msisdn: maskPhone(msisdn) },
      'pawapay initiation',
    );
    const first = await this.send(wire, uuid, body);
    if (first.kind === 'accepted') return accepted;
    this.opts.log?.warn(
      { connector: this.id, kind: wire.kind, id: ourId(uuid, wire), why: first.why },
      'pawapay initiation outcome unknown: asking its status',
    );
    const found = await this.lookup(wire, uuid);
    if (found.kind === 'found') return accepted;
    if (found.kind === 'unknown')
      throw retryable(
        'provider-unknown-outcome',
        `${this.id}: ${wire.kind} ${ourId(uuid, wire)} outcome unknown (${first.why}; status: ${found.why})`,
      );
    const again = await this.send(wire, uuid, body);
    if (again.kind === 'accepted') return accepted;
    throw retryable(
      'provider-unknown-outcome',
      `${this.id}: ${wire.kind} ${ourId(uuid, wire)} outcome unknown after a resend (${again.why})`,
    );
  }

  private async send(wire: KindWire, uuid: string, body: Record<string, unknown>): Promise<SendOutcome> {
    let res: HttpAnswer;
    try {
      res = await this.call('POST', wire.path, body);
    } catch (err) {
      return {
        kind: 'unknown',
        why: (err as Error).name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : 'unreachable',
      };
    }
    if (res.status >= 500) return { kind: 'unknown', why: `HTTP ${res.status}` };
    const answer = parseJson(res.body);
    if (answer === undefined || typeof answer !== 'object' || answer === null) {
      if (res.status >= 200 && res.status < 300) return { kind: 'unknown', why: 'unparsable answer' };
      throw this.httpRefusal(res.status, wire);
    }
    const a = answer as {
      status?: unknown;
      failureReason?: { failureCode?: unknown; failureMessage?: unknown };
      rejectionReason?: { rejectionCode?: unknown; rejectionMessage?: unknown };
    };
    // v2 names it failureReason; v1 answers carried rejectionReason: read either (README)
    if (!a.failureReason && a.rejectionReason)
      a.failureReason = {
        failureCode: a.rejectionReason.rejectionCode,
        failureMessage: a.rejectionReason.rejectionMessage,
      };
    const echoed = (answer as Record<string, unknown>)[wire.idField];
    if (res.status >= 200 && res.status < 300 && (a.status === 'ACCEPTED' || a.status === 'DUPLICATE_IGNORED')) {
      if (echoed !== undefined && echoed !== uuid)
        return { kind: 'unknown', why: `answer names another ${wire.idField}` };
      return { kind: 'accepted' };
    }
    const code = a.failureReason?.failureCode;
    if (a.status === 'REJECTED' || typeof code === 'string') {
      if (typeof code === 'string' && UNKNOWN_OUTCOME_CODES.has(code)) return { kind: 'unknown', why: code };
      if (typeof code === 'string' && CREDENTIAL_CODES.has(code))
        throw retryable('provider-auth', `${this.id} refused our credentials (${code})`);
      const mapped = mapFailure(code, wire.kind, a.failureReason?.failureMessage);
      throw permanent(mapped.failureCode, mapped.failureMessage);
    }
    if (res.status >= 400) throw this.httpRefusal(res.status, wire);
    return { kind: 'unknown', why: `unexpected status ${String(a.status).slice(0, 40)}` };
  }

  private httpRefusal(status: number, wire: KindWire): ProviderError {
    if (status === 401 || status === 403)
      return retryable('provider-auth', `${this.id} refused our credentials (HTTP ${status})`);
    if ([404, 408, 409, 425, 429].includes(status))
      return retryable(`provider-http-${status}`, `${this.id} answered HTTP ${status}`);
    return permanent('provider-refused', `${this.id} refused the ${wire.kind} (HTTP ${status})`);
  }

  // ---- status ---------------------------------------------------------------------------------

  async ask(op: OperationRef): Promise<ProviderStatus & EchoedAmount> {
    if (op.kind === 'card_payment') throw permanent('provider-protocol', `${this.id} does not carry card payments`);
    const wire = KINDS[op.kind];
    const uuid = pawapayId(op.id, wire) ?? (op.providerRef && isUuidV4(op.providerRef) ? op.providerRef : undefined);
    if (!uuid) throw permanent('provider-protocol', `${this.id}: ${op.id} is not a ${wire.prefix}<uuid v4>`);
    const found = await this.lookup(wire, uuid);
    if (found.kind === 'unknown')
      throw retryable('provider-unavailable', `${this.id}: status of ${op.id} unknown (${found.why})`);
    if (found.kind === 'not_found') return { state: 'not_found' };
    const data = found.data;
    const status = String(data.status);
    const currency = ourCurrency(data.currency) ?? null;
    const amount = currency ? (fromPawapayAmount(data.amount, currency) ?? null) : null;
    const providerRef = uuid;
    if (status === 'COMPLETED') return { state: 'succeeded', providerRef, amount, currency };
    if (status === 'FAILED') {
      const reason = (data.failureReason ?? {}) as { failureCode?: unknown; failureMessage?: unknown };
      return {
        state: 'failed',
        providerRef,
        ...mapFailure(reason.failureCode, wire.kind, reason.failureMessage),
        amount,
        currency,
      };
    }
    // ACCEPTED, ENQUEUED, SUBMITTED, PROCESSING, IN_RECONCILIATION, and any word we do not know: open
    return { state: 'pending', providerRef };
  }

  private async lookup(wire: KindWire, uuid: string): Promise<Lookup> {
    let res: HttpAnswer;
    try {
      res = await this.call('GET', `${wire.path}/${encodeURIComponent(uuid)}`);
    } catch (err) {
      return { kind: 'unknown', why: (err as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable' };
    }
    if (res.status === 401 || res.status === 403)
      throw retryable('provider-auth', `${this.id} refused our credentials (HTTP ${res.status})`);
    const body = parseJson(res.body);
    if (res.status === 404) {
      const s = (body as { status?: unknown } | undefined)?.status;
      return s === undefined || s === 'NOT_FOUND' ? { kind: 'not_found' } : { kind: 'unknown', why: 'HTTP 404' };
    }
    if (res.status < 200 || res.status >= 300) return { kind: 'unknown', why: `HTTP ${res.status}` };
    const check = checkContract('statusResponse', body);
    if (!check.ok) return { kind: 'unknown', why: `unparsable status answer (${describeErrors(check.errors)})` };
    const b = body as { status: 'FOUND' | 'NOT_FOUND'; data?: Record<string, unknown> };
    if (b.status === 'NOT_FOUND') return { kind: 'not_found' };
    const data = b.data!;
    if (data[wire.idField] !== undefined && data[wire.idField] !== uuid)
      return { kind: 'unknown', why: `status answer names another ${wire.idField}` };
    return { kind: 'found', data };
  }

  // ---- callbacks ------------------------------------------------------------------------------

  async verifyCallback(req: CallbackRequest): Promise<Verification> {
    return this.verifyAt(req, '');
  }

  /**
   * A statement callback (POST /callbacks/pawapay/statements, the URL the statement request
   * named) is signed as the transaction callbacks are, for its own URL (docs/reconciliation.md#statements).
   */
  async verifyStatementCallback(req: CallbackRequest): Promise<Verification> {
    return this.verifyAt(req, '/statements');
  }

  private async verifyAt(req: CallbackRequest, suffix: string): Promise<Verification> {
    if (this.opts.callbackSignatures === 'off') return 'unsigned';
    try {
      const host = typeof req.headers.host === 'string' ? req.headers.host : 'localhost';
      const url = `${this.opts.callbackUrl ?? `http://${host}/callbacks/${this.id}`}${suffix}`;
      const outcome = await verifySignedMessage(
        {
          raw: req.raw,
          headers: req.headers,
          method: 'POST',
          url,
          nowUnix: req.nowUnix,
          maxSkewSec: this.opts.callbackMaxSkewSec ?? 300,
        },
        (keyid) => this.publicKey(keyid),
      );
      if (outcome.ok) return 'verified';
      this.opts.log?.warn(
        { connector: this.id, ip: req.ip, reason: outcome.reason },
        'pawapay callback signature refused',
      );
      return 'invalid';
    } catch (err) {
      this.opts.log?.warn(
        { connector: this.id, ip: req.ip, reason: (err as Error).message },
        'pawapay callback signature refused',
      );
      return 'invalid';
    }
  }

  parseCallback(raw: Buffer, _headers: CallbackRequest['headers']): NormalisedCallback | 'ignore' {
    const body = parseJson(raw);
    if (body === undefined) throw new CallbackFormatError('pawaPay callback is not JSON', true);
    const check = checkContract('transaction', body);
    if (!check.ok) throw new CallbackFormatError(`pawaPay callback: ${describeErrors(check.errors)}`);
    const b = body as Record<string, unknown>;
    // a refund carries refundId and the refunded depositId: the refund is the subject
    const wire = b.refundId !== undefined ? KINDS.refund : b.payoutId !== undefined ? KINDS.payout : KINDS.payment;
    const uuid = String(b[wire.idField]);
    const status = String(b.status);
    if (!FINAL_STATUSES.has(status)) return 'ignore';
    let amount: number | null = null;
    let currency: Currency | null = null;
    if (b.currency !== undefined) {
      currency = ourCurrency(b.currency) ?? null;
      if (!currency)
        throw new CallbackFormatError(
          `pawaPay callback: currency ${JSON.stringify(b.currency).slice(0, 10)} is not one of ours`,
        );
    }
    if (b.amount !== undefined) {
      if (!currency) throw new CallbackFormatError('pawaPay callback: an amount without a currency');
      const minor = fromPawapayAmount(b.amount, currency);
      if (minor === undefined)
        throw new CallbackFormatError('pawaPay callback: amount is not an exact amount of its currency');
      amount = minor;
    }
    const reason = (b.failureReason ?? {}) as { failureCode?: unknown; failureMessage?: unknown };
    const failure = status === 'FAILED' ? mapFailure(reason.failureCode, wire.kind, reason.failureMessage) : null;
    return {
      eventId: callbackEventId(wire.kind, uuid, status),
      kind: wire.kind,
      objectId: ourId(uuid, wire),
      status: status === 'COMPLETED' ? 'succeeded' : 'failed',
      providerRef: uuid,
      failureCode: failure?.failureCode ?? null,
      failureMessage: failure?.failureMessage ?? null,
      amount,
      currency,
    };
  }

  callbackAnswer(): CallbackAnswer {
    return { status: 200 };
  }

  // ---- configuration, availability, keys ------------------------------------------------------

  /** Fetches active-conf and replaces the amount rules; keeps the previous ones when it fails. */
  async refreshActiveConf(): Promise<boolean> {
    try {
      const res = await this.call('GET', '/v2/active-conf?country=COD');
      const body = parseJson(res.body);
      if (res.status !== 200 || !checkContract('activeConf', body).ok) throw new Error(`HTTP ${res.status}`);
      const rules = parseActiveConf(body);
      // an answer naming none of our providers is more likely a fault than a closed account: keep what is in force
      if (rules.size === 0) throw new Error('no DRC provider in the answer');
      this.rules = rules;
      this.activeConfLoaded = true;
      return true;
    } catch (err) {
      this.opts.log?.warn(
        { connector: this.id, reason: (err as Error).message },
        'pawapay active-conf not refreshed: keeping the rules in force',
      );
      return false;
    }
  }

  async availability(): Promise<ProviderAvailability> {
    const ttl = this.opts.availabilityTtlMs ?? 60_000;
    const cached = this.availabilityCache;
    if (cached && this.now() - cached.at < ttl) return cached.value;
    try {
      const res = await this.call('GET', '/v2/availability?country=COD');
      const body = parseJson(res.body);
      if (res.status !== 200 || !checkContract('availability', body).ok) throw new Error(`HTTP ${res.status}`);
      const value = parseAvailability(body);
      this.availabilityCache = { at: this.now(), value };
      return value;
    } catch (err) {
      this.opts.log?.warn({ connector: this.id, reason: (err as Error).message }, 'pawapay availability unknown');
      return cached?.value ?? {};
    }
  }

  /** A callback key by its keyid: cached; an unknown keyid fetches the keys again, at most once per keyRefetchMinMs. */
  private async publicKey(keyid: string): Promise<KeyObject | undefined> {
    const known = this.keys.get(keyid);
    if (known) return known;
    if (!this.keysInFlight && this.now() - this.keysFetchedAt >= (this.opts.keyRefetchMinMs ?? 60_000)) {
      this.keysFetchedAt = this.now();
      this.keysInFlight = this.fetchKeys().finally(() => {
        this.keysInFlight = null;
      });
    }
    if (this.keysInFlight) await this.keysInFlight;
    return this.keys.get(keyid);
  }

  private async fetchKeys(): Promise<void> {
    try {
      const res = await this.call('GET', '/v2/public-key/http');
      const body = parseJson(res.body);
      if (res.status !== 200 || !checkContract('publicKeys', body).ok) throw new Error(`HTTP ${res.status}`);
      const next = new Map<string, KeyObject>();
      for (const { id, key } of body as { id: string; key: string }[]) {
        const parsed = parsePublicKey(key);
        if (parsed) next.set(id, parsed);
      }
      this.keys = next;
    } catch (err) {
      this.opts.log?.warn({ connector: this.id, reason: (err as Error).message }, 'pawapay public keys not fetched');
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  private call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<HttpAnswer> {
    const headers: Record<string, string> = { ...JSON_HEADERS, Authorization: `Bearer ${this.opts.apiToken}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const base = this.opts.baseUrl.replace(/\/+$/, '');
    return this.opts.client.request(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: this.opts.timeoutMs,
    });
  }

  private uuidOf(id: string, wire: KindWire): string {
    const uuid = pawapayId(id, wire);
    if (!uuid) throw permanent('provider-protocol', `${this.id}: ${id} is not a ${wire.prefix}<uuid v4>`);
    return uuid;
  }

  private providerOf(operator: Operator): string {
    const provider = PROVIDER_OF[operator];
    if (!provider) throw permanent('operator-unavailable', `${this.id} does not serve ${operator}`);
    return provider;
  }

  private phoneOf(msisdn: string): string {
    const phone = pawapayPhone(msisdn);
    if (!phone)
      throw permanent('provider-protocol', `${this.id}: the phone number ${maskPhone(msisdn)} is not 243 + 9 digits`);
    return phone;
  }

  /** Refused before anything leaves when the rule in force cannot carry the amount (422 amount-not-supported at creation). */
  private checkAmount(operator: Operator, amount: number, currency: Currency, direction: Direction): void {
    const rule = this.capabilities.amountRule(operator, currency, direction);
    if (!rule)
      throw permanent('amount-not-supported', `${this.id} cannot carry ${currency} for ${operator} (${direction})`);
    if (decimalsNeeded(amount, currency) > rule.decimals) {
      throw permanent(
        'amount-not-supported',
        `${this.id}: ${operator} takes ${rule.decimals} decimals in ${currency} (${direction})`,
      );
    }
    if ((rule.min !== null && amount < rule.min) || (rule.max !== null && amount > rule.max)) {
      const show = (v: number | null) => (v === null ? '-' : minorToDecimal(v, currency));
      throw permanent(
        'amount-not-supported',
        `${this.id}: ${operator} takes ${show(rule.min)} to ${show(rule.max)} ${currency} (${direction})`,
      );
    }
  }

  private amountText(minor: number, currency: Currency): string {
    return minorToDecimal(minor, currency, this.opts.amountFormat === 'fixed' && CURRENCY_EXPONENT[currency] > 0);
  }
}

function parseJson(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** PEM, or base64 of a DER SubjectPublicKeyInfo. */
export function parsePublicKey(text: string): KeyObject | undefined {
  try {
    if (text.includes('-----BEGIN')) return createPublicKey(text);
    return createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
  } catch {
    return undefined;
  }
}

/** Our description as pawaPay's customerMessage: letters, digits and spaces, 4 to 22 characters; nothing when that leaves too little. */
export function customerMessage(description: string | null | undefined): string | undefined {
  if (!description) return undefined;
  const text = description
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-zA-Z0-9 ]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 22)
    .trim();
  return text.length >= 4 ? text : undefined;
}
