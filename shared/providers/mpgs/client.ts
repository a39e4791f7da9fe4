import { createHash, timingSafeEqual } from 'node:crypto';
import type { Currency } from '../../vocabulary';
import type { HttpAnswer, HttpClient } from '../../httpClient';
import { CallbackFormatError, permanent, retryable } from '../errors';
import { check, describeProblems, type MpgsSchemaName } from './schema';
import type { MpgsSettings } from './settings';
import {
  authenticatePayerBody,
  createSessionBody,
  initiateAuthenticationBody,
  payBody,
  readOrder,
  readTransaction,
  refundBody,
  updateSessionBody,
  voidBody,
  type AmountFormat,
  type BrowserDetails,
  type OrderView,
  type PayInput,
  type TransactionView,
} from './wire';

/** What the client logs through (pino's signature): ids, codes and reasons only, never a body or a secret. */
export interface MpgsLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export type MpgsClientOptions = Pick<MpgsSettings, 'gatewayUrl' | 'merchantId' | 'apiPassword' | 'timeoutMs'> &
  Partial<Pick<MpgsSettings, 'apiVersion' | 'amountFormat' | 'authenticationLimit' | 'acceptVersions'>> & {
    client: HttpClient;
    log?: MpgsLog;
  };

/** A transaction answer, and how it was obtained: the operation's own answer, or a retrieve that settled an unknown outcome. */
export type Settled = TransactionView & { settledBy: 'answer' | 'retrieve' };

type Call =
  | { kind: 'ok'; status: number; body: unknown }
  /** no usable answer: timeout, network, 5xx, unparsable 2xx, 2xx out of contract */
  | { kind: 'unknown'; why: string }
  /** the gateway's error shape (4xx), or a 4xx without one */
  | { kind: 'refused'; status: number; cause: string; explanation: string; field: string | null };

/**
 * The answer of a retrieve for something that does not exist. The reference does not say which
 * status or words (README unclear point 4): HTTP 404, or 400 INVALID_REQUEST whose explanation
 * says it was not found. Anything else is unknown. A wrong "not found" is still safe: the resend
 * that follows uses the same ids, which the gateway refuses as a duplicate, and that refusal is
 * settled by a retrieve again.
 */
const NOT_FOUND = /unable to find|not found|no (such )?(order|transaction)|does not exist|doesn't exist/i;

/**
 * The Mastercard Gateway REST API (version 100 by default) over Basic auth (`merchant.<id>` and
 * the API password), one method per operation (README.md in this folder). Every request is
 * checked against ./schema before it leaves and every answer before it is read: an answer out of
 * contract is an unknown outcome, never a failure. Transaction operations settle an unknown
 * outcome themselves (retrieve; not found: one resend with the same ids; else a retryable
 * `provider-unknown-outcome`), so that no call here can charge twice.
 */
export class MpgsClient {
  private readonly base: string;
  private readonly authorization: string;
  private readonly format: AmountFormat;

  constructor(private readonly opts: MpgsClientOptions) {
    this.base = `${opts.gatewayUrl.replace(/\/+$/, '')}/api/rest/version/${opts.apiVersion ?? 100}/merchant/${encodeURIComponent(opts.merchantId)}`;
    this.authorization = `Basic ${Buffer.from(`merchant.${opts.merchantId}:${opts.apiPassword}`).toString('base64')}`;
    this.format = opts.amountFormat ?? 'fixed';
  }

  // ---- sessions ----------------------------------------------------------------------------

  /** CREATE_SESSION: a session for the checkout page's hosted fields. */
  async createSession(): Promise<{ sessionId: string; authenticationLimit: number | null }> {
    const res = await this.call(
      'POST',
      '/session',
      createSessionBody(this.opts.authenticationLimit),
      'createSessionRequest',
    );
    const body = this.sessionAnswer(res, 'CREATE_SESSION');
    const s = (body as { result?: string; session: { id: string; authenticationLimit?: number } }).session;
    if ((body as { result?: string }).result !== undefined && (body as { result?: string }).result !== 'SUCCESS')
      throw retryable(
        'provider-unavailable',
        `mpgs CREATE_SESSION answered result ${(body as { result?: string }).result}`,
      );
    return { sessionId: s.id, authenticationLimit: s.authenticationLimit ?? null };
  }

  /** UPDATE_SESSION: the order's amount, currency and id, before the payer enters the card. */
  async updateSession(sessionId: string, minor: number, currency: Currency, orderId: string): Promise<void> {
    const res = await this.call(
      'PUT',
      `/session/${encodeURIComponent(sessionId)}`,
      updateSessionBody(minor, currency, orderId, this.format),
      'updateSessionRequest',
    );
    const body = this.sessionAnswer(res, 'UPDATE_SESSION') as { session: { id: string; updateStatus?: string } };
    if (body.session.id !== sessionId)
      throw retryable('provider-unavailable', 'mpgs UPDATE_SESSION answered another session');
    if (body.session.updateStatus === 'FAILURE') throw permanent('provider-refused', 'mpgs UPDATE_SESSION failed');
  }

  private sessionAnswer(res: Call, op: string): unknown {
    if (res.kind === 'unknown') throw retryable('provider-unavailable', `mpgs ${op}: ${res.why}`);
    if (res.kind === 'refused') throw this.refusal(op, res);
    const problems = check('sessionAnswer', res.body);
    if (problems.length > 0)
      throw retryable('provider-unavailable', `mpgs ${op} answer out of contract (${describeProblems(problems)})`);
    return res.body;
  }

  // ---- 3-D Secure --------------------------------------------------------------------------

  /** INITIATE_AUTHENTICATION on the session's card; read it with decideAuthentication (wire.ts). */
  initiateAuthentication(
    sessionId: string,
    orderId: string,
    transactionId: string,
    currency: Currency,
  ): Promise<Settled> {
    return this.transact(
      'INITIATE_AUTHENTICATION',
      orderId,
      transactionId,
      initiateAuthenticationBody(sessionId, currency, this.opts.acceptVersions ?? '3DS2'),
      'initiateAuthenticationRequest',
      (t) => t.authenticationStatus !== null,
    );
  }

  /**
   * AUTHENTICATE_PAYER with the payer's browser and the service's return URL, on the ids of the
   * INITIATE_AUTHENTICATION. Frictionless: authenticationStatus AUTHENTICATION_SUCCESSFUL;
   * challenge: AUTHENTICATION_PENDING and redirectHtml to insert in the page.
   */
  authenticatePayer(
    sessionId: string,
    orderId: string,
    transactionId: string,
    minor: number,
    currency: Currency,
    browser: BrowserDetails,
    redirectResponseUrl: string,
  ): Promise<Settled> {
    return this.transact(
      'AUTHENTICATE_PAYER',
      orderId,
      transactionId,
      authenticatePayerBody(sessionId, minor, currency, browser, redirectResponseUrl, this.format),
      'authenticatePayerRequest',
      // a retrieve still showing only the initiation has not seen this request
      (t) => t.authenticationStatus !== null && t.authenticationStatus !== 'AUTHENTICATION_AVAILABLE',
    );
  }

  // ---- money -------------------------------------------------------------------------------

  /** PAY the session's card; a decline is a Settled with result FAILURE (codes.ts classify). */
  pay(orderId: string, transactionId: string, p: PayInput): Promise<Settled> {
    return this.transact(
      'PAY',
      orderId,
      transactionId,
      payBody(p, this.format),
      'payRequest',
      (t) => t.type === 'PAYMENT',
    );
  }

  /** REFUND part or all of the order's captured amount, as a new transaction (its id: refundTransactionId). */
  refund(orderId: string, transactionId: string, minor: number, currency: Currency): Promise<Settled> {
    return this.transact(
      'REFUND',
      orderId,
      transactionId,
      refundBody(minor, currency, this.format),
      'refundRequest',
      (t) => t.type === 'REFUND',
    );
  }

  /** VOID a transaction not yet sent for settlement. */
  void(orderId: string, transactionId: string, targetTransactionId: string): Promise<Settled> {
    return this.transact('VOID', orderId, transactionId, voidBody(targetTransactionId), 'voidRequest', (t) =>
      (t.type ?? '').startsWith('VOID'),
    );
  }

  // ---- retrieve ----------------------------------------------------------------------------

  /** RETRIEVE_TRANSACTION: null when the gateway has no such transaction; a retryable error when unknown. */
  async retrieveTransaction(orderId: string, transactionId: string): Promise<TransactionView | null> {
    const found = await this.lookup(
      `/order/${encodeURIComponent(orderId)}/transaction/${encodeURIComponent(transactionId)}`,
      'transactionAnswer',
    );
    if (found.kind === 'unknown')
      throw retryable('provider-unavailable', `mpgs: transaction ${orderId}/${transactionId} unknown (${found.why})`);
    if (found.kind === 'not_found') return null;
    const t = readTransaction(found.body);
    if (t.orderId !== orderId || t.transactionId !== transactionId)
      throw retryable(
        'provider-unavailable',
        `mpgs: retrieve of ${orderId}/${transactionId} named another transaction`,
      );
    return t;
  }

  /** RETRIEVE_ORDER: the order and all its transactions; null when the gateway has no such order. */
  async retrieveOrder(orderId: string): Promise<OrderView | null> {
    const found = await this.lookup(`/order/${encodeURIComponent(orderId)}`, 'orderAnswer');
    if (found.kind === 'unknown')
      throw retryable('provider-unavailable', `mpgs: order ${orderId} unknown (${found.why})`);
    if (found.kind === 'not_found') return null;
    const o = readOrder(found.body);
    if (o.orderId !== orderId)
      throw retryable('provider-unavailable', `mpgs: retrieve of ${orderId} named another order`);
    return o;
  }

  private async lookup(
    path: string,
    schema: MpgsSchemaName,
  ): Promise<{ kind: 'found'; body: unknown } | { kind: 'not_found' } | { kind: 'unknown'; why: string }> {
    const res = await this.call('GET', path);
    if (res.kind === 'unknown') return res;
    if (res.kind === 'refused') {
      if (res.status === 401 || res.status === 403) throw this.refusal('RETRIEVE', res);
      if (res.status === 404 || (res.cause === 'INVALID_REQUEST' && NOT_FOUND.test(res.explanation)))
        return { kind: 'not_found' };
      return { kind: 'unknown', why: `HTTP ${res.status} ${res.cause}` };
    }
    const problems = check(schema, res.body);
    if (problems.length > 0) return { kind: 'unknown', why: `answer out of contract (${describeProblems(problems)})` };
    return { kind: 'found', body: res.body };
  }

  // ---- notifications -----------------------------------------------------------------------

  /** Whether a notification carries our secret in X-Notification-Secret (constant time). */
  verifyNotification(headers: Record<string, string | string[] | undefined>, secret: string): boolean {
    return verifyNotification(headers, secret);
  }

  /** A notification's body (the Retrieve Transaction answer), read; CallbackFormatError when it is not one. */
  parseNotification(raw: Buffer | string): TransactionView {
    return parseNotification(raw);
  }

  // ---- transactions ------------------------------------------------------------------------

  /**
   * PUT a transaction operation and settle what its answer leaves unknown:
   * - a schema-valid 2xx: that answer;
   * - timeout, network, 5xx, unparsable or out-of-contract answer, or a 4xx INVALID_REQUEST (a
   *   resent id the gateway refuses as a duplicate looks like one): RETRIEVE_TRANSACTION; found
   *   (and `applied`): that transaction; not found after an unknown outcome: one resend with
   *   the same ids; not found after a refusal: the refusal; anything else: retryable
   *   `provider-unknown-outcome`.
   */
  private async transact(
    op: string,
    orderId: string,
    transactionId: string,
    body: Record<string, unknown>,
    schema: MpgsSchemaName,
    applied: (t: TransactionView) => boolean,
  ): Promise<Settled> {
    const path = `/order/${encodeURIComponent(orderId)}/transaction/${encodeURIComponent(transactionId)}`;
    const ids = { orderId, transactionId, op };
    for (let sent = 1; ; sent++) {
      const res = await this.call('PUT', path, body, schema);
      const answer = this.transactionAnswer(res, orderId, transactionId);
      if (answer.kind === 'ok') return { ...answer.view, settledBy: 'answer' };
      if (res.kind === 'refused' && (res.status === 401 || res.status === 403)) throw this.refusal(op, res);
      if (res.kind === 'refused' && res.cause !== 'INVALID_REQUEST') throw this.refusal(op, res);
      this.opts.log?.warn({ ...ids, why: answer.why }, 'mpgs outcome unknown: retrieving the transaction');
      let found: TransactionView | null;
      try {
        found = await this.retrieveTransaction(orderId, transactionId);
      } catch (err) {
        throw retryable(
          'provider-unknown-outcome',
          `mpgs ${op} ${orderId}/${transactionId} outcome unknown (${answer.why}; ${(err as Error).message})`,
        );
      }
      if (found && applied(found)) return { ...found, settledBy: 'retrieve' };
      if (res.kind === 'refused') throw this.refusal(op, res);
      if (sent >= 2)
        throw retryable(
          'provider-unknown-outcome',
          `mpgs ${op} ${orderId}/${transactionId} outcome unknown after a resend (${answer.why})`,
        );
      this.opts.log?.info(ids, 'mpgs transaction not found: sending it again with the same ids');
    }
  }

  private transactionAnswer(
    res: Call,
    orderId: string,
    transactionId: string,
  ): { kind: 'ok'; view: TransactionView } | { kind: 'unknown'; why: string } {
    if (res.kind === 'unknown') return res;
    if (res.kind === 'refused') return { kind: 'unknown', why: `HTTP ${res.status} ${res.cause}` };
    const problems = check('transactionAnswer', res.body);
    if (problems.length > 0) return { kind: 'unknown', why: `answer out of contract (${describeProblems(problems)})` };
    const view = readTransaction(res.body);
    if (view.orderId !== orderId || view.transactionId !== transactionId)
      return { kind: 'unknown', why: 'answer names another order or transaction' };
    return { kind: 'ok', view };
  }

  private refusal(op: string, res: Extract<Call, { kind: 'refused' }>) {
    if (res.status === 401 || res.status === 403)
      return retryable('provider-auth', `mpgs refused our credentials (HTTP ${res.status})`);
    if (res.cause === 'SERVER_BUSY' || res.cause === 'SERVER_FAILED' || res.status === 429)
      return retryable('provider-unavailable', `mpgs ${op}: ${res.cause}`);
    const field = res.field ? ` (${res.field})` : '';
    return permanent(
      'provider-refused',
      `mpgs refused ${op}: ${res.cause}${field} ${res.explanation}`.trim().slice(0, 300),
    );
  }

  // ---- HTTP --------------------------------------------------------------------------------

  private async call(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: unknown,
    schema?: MpgsSchemaName,
  ): Promise<Call> {
    if (schema) {
      const problems = check(schema, body);
      // our own request out of contract is our bug: never sent
      if (problems.length > 0)
        throw permanent('provider-protocol', `mpgs request out of contract (${schema}: ${describeProblems(problems)})`);
    }
    let res: HttpAnswer;
    try {
      res = await this.opts.client.request(this.base + path, {
        method,
        headers: {
          Authorization: this.authorization,
          Accept: 'application/json',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json;charset=UTF-8' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        timeoutMs: this.opts.timeoutMs,
      });
    } catch (err) {
      return {
        kind: 'unknown',
        why: (err as Error).name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : 'unreachable',
      };
    }
    if (res.status >= 500) return { kind: 'unknown', why: `HTTP ${res.status}` };
    const parsed = parseJson(res.body);
    if (res.status >= 200 && res.status < 300) {
      return parsed === undefined
        ? { kind: 'unknown', why: 'unparsable answer' }
        : { kind: 'ok', status: res.status, body: parsed };
    }
    if (res.status >= 400) {
      const e =
        check('error', parsed).length === 0 ? (parsed as { error: Record<string, string | undefined> }).error : null;
      return {
        kind: 'refused',
        status: res.status,
        cause: e?.cause ?? `HTTP_${res.status}`,
        explanation: (e?.explanation ?? '').slice(0, 200),
        field: e?.field ?? null,
      };
    }
    return { kind: 'unknown', why: `HTTP ${res.status}` };
  }
}

/** Whether the X-Notification-Secret header is `secret`, compared in constant time (over digests: no length leak). */
export function verifyNotification(headers: Record<string, string | string[] | undefined>, secret: string): boolean {
  const raw = headers['x-notification-secret'];
  const got = Array.isArray(raw) ? raw[0] : raw;
  if (typeof got !== 'string' || got.length === 0 || secret.length === 0) return false;
  const a = createHash('sha256').update(got).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** X-Notification-Id (the gateway's id of one notification, the same on every attempt), if any. */
export function notificationIdOf(headers: Record<string, string | string[] | undefined>): string | null {
  const raw = headers['x-notification-id'];
  const v = Array.isArray(raw) ? raw[0] : raw;
  return typeof v === 'string' && v.length > 0 && v.length <= 100 ? v : null;
}

export function parseNotification(raw: Buffer | string): TransactionView {
  const body = parseJson(typeof raw === 'string' ? Buffer.from(raw) : raw);
  if (body === undefined) throw new CallbackFormatError('mpgs notification is not JSON', true);
  const problems = check('transactionAnswer', body);
  if (problems.length > 0) throw new CallbackFormatError(`mpgs notification: ${describeProblems(problems)}`);
  return readTransaction(body);
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
