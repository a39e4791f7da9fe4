import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpClient } from '../../../shared/httpClient';
import { decimalToMinor, minorToDecimal } from '../../../shared/providers/amounts';
import { check, type MpgsSchemaName, type SchemaProblem } from '../../../shared/providers/mpgs/schema';
import { ourCurrency } from '../../../shared/providers/mpgs/wire';
import type { Currency } from '../../../shared/vocabulary';
import { mpgsReport, type MpgsFinances, type MpgsReportRow } from './report';
import {
  CARD_FIELDS,
  challengePage,
  challengeRedirectHtml,
  fieldPage,
  frictionlessRedirectHtml,
  returnFields,
  returnPage,
  sessionJs,
  type CardField,
} from './browser-assets';

/**
 * A simulator of the Mastercard Gateway REST API version 100 (README.md in
 * shared/providers/mpgs: test cards, faults, control endpoints): Basic auth, sessions, hosted
 * fields and session.js, INITIATE_AUTHENTICATION / AUTHENTICATE_PAYER with a challenge page,
 * PAY / REFUND / VOID / RETRIEVE_*, webhook notifications. Every request body is checked against
 * the connector's own schemas; a violation gets 400 with the gateway's error shape. In memory.
 * Never runs in production: it lives in scripts/.
 */

export interface MpgsSimCard {
  number: string;
  expiryMonth: string;
  /** two digits */
  expiryYear: string;
  securityCode?: string;
}

export type TransactionFault = '5xx-created' | '5xx-not-created' | 'slow';
export type NotificationMode = 'normal' | 'duplicate' | 'late' | 'missing';
export type FormFault = 'none' | 'system_error' | 'request_timeout';

export interface MpgsSimFaults {
  /** applied once, to the next PAY or REFUND */
  nextTransaction?: TransactionFault | null;
  /** how notifications are sent from now on */
  notifications?: NotificationMode;
  /** the delay of 'late' notifications (ms) */
  lateMs?: number;
  /** applied once, to the next updateSessionFromForm commit */
  nextFormUpdate?: FormFault;
}

export interface MpgsSimTransaction {
  orderId: string;
  id: string;
  apiOperation: string;
  type: string;
  result: string;
  gatewayCode: string;
  gatewayRecommendation: string | null;
  authenticationStatus: string | null;
  amount: string | null;
  currency: Currency;
  /** PUT requests received for this id (more than 1: refused duplicates) */
  requests: number;
  created: string;
}

export interface MpgsSimNotification {
  notificationId: string;
  attempt: number;
  orderId: string;
  transactionId: string;
  url: string;
  status: number | null;
}

export interface MpgsSimulatorOptions {
  port?: number;
  host?: string;
  merchantId: string;
  apiPassword: string;
  /** sent in X-Notification-Secret */
  notificationSecret: string;
  /** the Merchant Administration notification URL; order.notificationUrl overrides it; null: none */
  notificationUrl?: string | null;
  /** how long the slow faults wait (ms); default 5 000 */
  slowMs?: number;
  /** session.js's request_timeout (ms); default 10 000 */
  formTimeoutMs?: number;
  /** notification attempts on a non-2xx answer; default 3, 300 ms apart */
  notificationAttempts?: number;
  notificationRetryMs?: number;
  /** the clock of transactions' times (and so of the report); default Date.now */
  now?: () => number;
  log?: (line: string) => void;
}

export interface MpgsSimulator {
  url: string;
  port: number;
  close(): Promise<void>;
  transactions(): MpgsSimTransaction[];
  notifications(): MpgsSimNotification[];
  refusals(): { path: string; explanation: string }[];
  setFaults(f: MpgsSimFaults): void;
  /** what the hosted fields would store: a card in a session (tests without a browser) */
  putCard(sessionId: string, card: MpgsSimCard): void;
  /** ends a pending challenge as the payer would on the ACS page; the fields the browser would post back */
  completeChallenge(
    orderId: string,
    transactionId: string,
    approve: boolean,
  ): { url: string; fields: Record<string, string> };
  /** the transaction report and its injections (./report.ts) */
  finances: MpgsFinances;
  reset(): void;
}

interface Session {
  id: string;
  version: number;
  authenticationLimit: number;
  authentications: number;
  order: { amount?: string; currency?: string; id?: string };
  fields: Partial<Record<CardField, string>>;
  card: MpgsSimCard | null;
}

interface Txn extends MpgsSimTransaction {
  payerInteraction: string | null;
  redirectHtml: string | null;
  redirectResponseUrl: string | null;
  targetTransactionId: string | null;
  notificationUrl: string | null;
  card: MpgsSimCard | null;
  voided: boolean;
}

interface Order {
  id: string;
  currency: Currency;
  amount: string | null;
  status: string;
  authenticationStatus: string | null;
  captured: number;
  refunded: number;
  notificationUrl: string | null;
  txns: Map<string, Txn>;
}

/** Test cards by number (3-D Secure behaviour); PAY outcomes by expiry (shared/providers/mpgs/README.md#simulator-npm-run-simmpgs-scriptssimulatorsmpgs). */
const CHALLENGE_CARDS = new Set(['5123450000000008']);
const FRICTIONLESS_FAILED_CARDS = new Set(['5555555555554444']);
const NOT_ENROLLED_CARDS = new Set(['5111111111111118']);

const EXPIRY_OUTCOMES: Record<string, { result: string; code: string; fault?: TransactionFault }> = {
  '01/39': { result: 'SUCCESS', code: 'APPROVED' },
  '05/39': { result: 'FAILURE', code: 'DECLINED' },
  '04/27': { result: 'FAILURE', code: 'EXPIRED_CARD' },
  '08/28': { result: 'FAILURE', code: 'TIMED_OUT' },
  '01/37': { result: 'FAILURE', code: 'ACQUIRER_SYSTEM_ERROR' },
  '02/37': { result: 'FAILURE', code: 'UNSPECIFIED_FAILURE' },
  '05/37': { result: 'UNKNOWN', code: 'UNKNOWN' },
  // the simulator's own (the gateway documents no expiry for these)
  '06/39': { result: 'FAILURE', code: 'INSUFFICIENT_FUNDS' },
  '09/39': { result: 'SUCCESS', code: 'APPROVED', fault: '5xx-created' },
  '10/39': { result: 'SUCCESS', code: 'APPROVED', fault: 'slow' },
};

const API = /^\/api\/rest\/version\/(\d+)\/merchant\/([^/]+)(\/.*)$/;
const FORM = /^\/form\/version\/(\d+)\/merchant\/([^/]+)\/(session\.js|field|session\/([^/]+)\/(field|commit))$/;

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly gatewayCause: string,
    explanation: string,
    readonly field?: string,
    readonly validationType?: string,
  ) {
    super(explanation);
  }
}

const luhn = (n: string) =>
  [...n].reverse().reduce((sum, ch, i) => {
    let d = Number(ch);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    return sum + d;
  }, 0) %
    10 ===
  0;

export async function startMpgsSimulator(opts: MpgsSimulatorOptions): Promise<MpgsSimulator> {
  const sessions = new Map<string, Session>();
  const orders = new Map<string, Order>();
  const challenges = new Map<string, { orderId: string; txnId: string }>();
  const sent: MpgsSimNotification[] = [];
  const refused: { path: string; explanation: string }[] = [];
  let faults: Required<MpgsSimFaults> = {
    nextTransaction: null,
    notifications: 'normal',
    lateMs: 2000,
    nextFormUpdate: 'none',
  };
  const timers = new Set<NodeJS.Timeout>();
  const client = new HttpClient(8);
  const log = opts.log ?? (() => undefined);
  const slowMs = opts.slowMs ?? 5000;
  const now = opts.now ?? (() => Date.now());
  const expectedAuth = Buffer.from(
    `Basic ${Buffer.from(`merchant.${opts.merchantId}:${opts.apiPassword}`).toString('base64')}`,
  );
  let origin = '';

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => later(ms, resolve));

  // ---- answers ------------------------------------------------------------------------------

  const num = (text: string | null) => (text === null ? undefined : Number(text));
  const dec = (minor: number, c: Currency) => Number(minorToDecimal(minor, c));
  function maskedCard(card: MpgsSimCard | null) {
    if (!card) return undefined;
    return {
      provided: {
        card: {
          brand: /^3[47]/.test(card.number) ? 'AMEX' : card.number.startsWith('4') ? 'VISA' : 'MASTERCARD',
          number: `${card.number.slice(0, 6)}xxxxxx${card.number.slice(-4)}`,
          expiry: { month: card.expiryMonth, year: card.expiryYear },
        },
      },
      type: 'CARD',
    };
  }
  function transactionAnswer(o: Order, t: Txn): Record<string, unknown> {
    return {
      merchant: opts.merchantId,
      result: t.result,
      response: {
        gatewayCode: t.gatewayCode,
        ...(t.gatewayRecommendation ? { gatewayRecommendation: t.gatewayRecommendation } : {}),
      },
      order: {
        id: o.id,
        ...(o.amount !== null ? { amount: num(o.amount) } : {}),
        currency: o.currency,
        status: o.status,
        ...(o.authenticationStatus ? { authenticationStatus: o.authenticationStatus } : {}),
        totalCapturedAmount: dec(o.captured, o.currency),
        totalRefundedAmount: dec(o.refunded, o.currency),
      },
      transaction: {
        id: t.id,
        type: t.type,
        ...(t.amount !== null ? { amount: num(t.amount) } : {}),
        currency: t.currency,
        ...(t.authenticationStatus ? { authenticationStatus: t.authenticationStatus } : {}),
        ...(t.targetTransactionId ? { targetTransactionId: t.targetTransactionId } : {}),
      },
      ...(t.type === 'AUTHENTICATION'
        ? {
            authentication: {
              version: '3DS2',
              ...(t.payerInteraction ? { payerInteraction: t.payerInteraction } : {}),
              ...(t.redirectHtml ? { redirect: { html: t.redirectHtml } } : {}),
            },
          }
        : {}),
      ...(t.card ? { sourceOfFunds: maskedCard(t.card) } : {}),
      timeOfRecord: t.created,
      version: '100',
    };
  }
  function orderAnswer(o: Order): Record<string, unknown> {
    return {
      merchant: opts.merchantId,
      result: 'SUCCESS',
      id: o.id,
      ...(o.amount !== null ? { amount: num(o.amount) } : {}),
      currency: o.currency,
      status: o.status,
      ...(o.authenticationStatus ? { authenticationStatus: o.authenticationStatus } : {}),
      totalCapturedAmount: dec(o.captured, o.currency),
      totalRefundedAmount: dec(o.refunded, o.currency),
      transaction: [...o.txns.values()].map((t) => transactionAnswer(o, t)),
    };
  }

  // ---- notifications ------------------------------------------------------------------------

  function notify(o: Order, t: Txn) {
    const url = t.notificationUrl ?? o.notificationUrl ?? opts.notificationUrl ?? null;
    if (!url || faults.notifications === 'missing') return;
    const body = JSON.stringify(transactionAnswer(o, t));
    const notificationId = randomUUID();
    const deliver = async (attempt: number): Promise<void> => {
      let status: number | null;
      try {
        const res = await client.request(url, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json; charset=UTF-8',
            'X-Notification-Secret': opts.notificationSecret,
            'X-Notification-Id': notificationId,
            'X-Notification-Attempt': String(attempt),
          },
          body,
          timeoutMs: 5000,
        });
        status = res.status;
      } catch {
        status = null;
      }
      sent.push({ notificationId, attempt, orderId: o.id, transactionId: t.id, url, status });
      log(`notification ${o.id}/${t.id} attempt ${attempt}: ${status ?? 'unreachable'}`);
      if ((status === null || status < 200 || status >= 300) && attempt < (opts.notificationAttempts ?? 3))
        later(opts.notificationRetryMs ?? 300, () => void deliver(attempt + 1));
    };
    const delay = faults.notifications === 'late' ? faults.lateMs : 20;
    later(delay, () => void deliver(1));
    if (faults.notifications === 'duplicate') later(delay + 50, () => void deliver(1));
  }

  // ---- operations ---------------------------------------------------------------------------

  function requireSchema(name: MpgsSchemaName, body: unknown) {
    const problems: SchemaProblem[] = check(name, body);
    const p = problems[0];
    if (!p) return;
    const field = p.path.replace(/^\//, '').replace(/\//g, '.');
    const validationType =
      p.keyword === 'required' ? 'MISSING' : p.keyword === 'additionalProperties' ? 'UNSUPPORTED' : 'INVALID';
    const what =
      validationType === 'MISSING'
        ? `Missing parameter '${field}'`
        : validationType === 'UNSUPPORTED'
          ? `Unexpected parameter '${field}'`
          : `Value for field '${field}' is invalid: ${p.message}`;
    throw new Refusal(400, 'INVALID_REQUEST', what, field, validationType);
  }

  function sessionOf(id: string): Session {
    const s = sessions.get(id);
    if (!s) throw new Refusal(400, 'INVALID_REQUEST', `Unable to find session '${id}'`, 'session.id', 'INVALID');
    return s;
  }

  function cardOf(s: Session): MpgsSimCard {
    if (!s.card)
      throw new Refusal(400, 'INVALID_REQUEST', 'Session does not contain card details', 'session.id', 'INVALID');
    return s.card;
  }

  function currencyOf(raw: unknown): Currency {
    const c = ourCurrency(raw);
    if (!c) throw new Refusal(400, 'INVALID_REQUEST', `Currency '${String(raw)}' is not supported`, 'order.currency');
    return c;
  }

  function orderFor(orderId: string, currency: Currency, create: boolean): Order {
    let o = orders.get(orderId);
    if (!o) {
      if (!create) throw new Refusal(400, 'INVALID_REQUEST', `Unable to find order '${orderId}'`, 'orderId', 'INVALID');
      o = {
        id: orderId,
        currency,
        amount: null,
        status: 'INITIATED',
        authenticationStatus: null,
        captured: 0,
        refunded: 0,
        notificationUrl: null,
        txns: new Map(),
      };
      orders.set(orderId, o);
    }
    if (o.currency !== currency)
      throw new Refusal(400, 'INVALID_REQUEST', `Currency must be the order's (${o.currency})`, 'order.currency');
    return o;
  }

  function newTxn(o: Order, id: string, apiOperation: string, type: string, currency: Currency): Txn {
    const existing = o.txns.get(id);
    if (existing) {
      existing.requests++;
      throw new Refusal(
        400,
        'INVALID_REQUEST',
        `Transaction with id '${id}' already exists on order '${o.id}'`,
        'transactionId',
        'INVALID',
      );
    }
    const t: Txn = {
      orderId: o.id,
      id,
      apiOperation,
      type,
      result: 'PENDING',
      gatewayCode: 'PENDING',
      gatewayRecommendation: null,
      authenticationStatus: null,
      amount: null,
      currency,
      requests: 1,
      created: new Date(now()).toISOString(),
      payerInteraction: null,
      redirectHtml: null,
      redirectResponseUrl: null,
      targetTransactionId: null,
      notificationUrl: null,
      card: null,
      voided: false,
    };
    o.txns.set(id, t);
    return t;
  }

  const minorOf = (amount: string, c: Currency) => {
    const m = decimalToMinor(amount, c);
    if (m === undefined) throw new Refusal(400, 'INVALID_REQUEST', 'Invalid amount', 'order.amount', 'INVALID');
    return m;
  };

  function initiate(orderId: string, txnId: string, b: Record<string, any>) {
    requireSchema('initiateAuthenticationRequest', b);
    const s = sessionOf(b.session.id);
    const card = cardOf(s);
    const o = orderFor(orderId, currencyOf(b.order.currency), true);
    const t = newTxn(o, txnId, 'INITIATE_AUTHENTICATION', 'AUTHENTICATION', o.currency);
    t.card = card;
    t.result = 'SUCCESS';
    t.gatewayRecommendation = 'PROCEED';
    if (NOT_ENROLLED_CARDS.has(card.number)) {
      t.gatewayCode = 'NOT_ENROLLED_3D_SECURE';
      t.authenticationStatus = 'AUTHENTICATION_NOT_SUPPORTED';
    } else {
      t.gatewayCode = 'AUTHENTICATION_IN_PROGRESS';
      t.authenticationStatus = 'AUTHENTICATION_AVAILABLE';
    }
    o.authenticationStatus = t.authenticationStatus;
    o.status = 'AUTHENTICATION_INITIATED';
    notify(o, t);
    return transactionAnswer(o, t);
  }

  function authenticate(orderId: string, txnId: string, b: Record<string, any>) {
    requireSchema('authenticatePayerRequest', b);
    const s = sessionOf(b.session.id);
    const card = cardOf(s);
    const o = orderFor(orderId, currencyOf(b.order.currency), false);
    const t = o.txns.get(txnId);
    if (!t || t.type !== 'AUTHENTICATION')
      throw new Refusal(
        400,
        'INVALID_REQUEST',
        'Authentication has not been initiated for this transaction',
        'transactionId',
      );
    if (
      t.authenticationStatus !== 'AUTHENTICATION_AVAILABLE' &&
      t.authenticationStatus !== 'AUTHENTICATION_NOT_SUPPORTED'
    ) {
      t.requests++;
      throw new Refusal(400, 'INVALID_REQUEST', 'Payer authentication has already been performed', 'transactionId');
    }
    if (++s.authentications > s.authenticationLimit)
      throw new Refusal(400, 'REQUEST_REJECTED', 'Session authentication limit exceeded', 'session.id');
    t.requests++;
    minorOf(b.order.amount, o.currency);
    t.amount = b.order.amount;
    o.amount = b.order.amount;
    t.redirectResponseUrl = b.authentication.redirectResponseUrl;
    const back = (result: string, rec: string) =>
      frictionlessRedirectHtml(t.redirectResponseUrl!, returnFields(o.id, t.id, result, rec));
    if (t.authenticationStatus === 'AUTHENTICATION_NOT_SUPPORTED') {
      t.payerInteraction = 'NOT_REQUIRED';
      t.redirectHtml = back('SUCCESS', 'PROCEED');
    } else if (CHALLENGE_CARDS.has(card.number)) {
      const token = randomBytes(18).toString('base64url');
      challenges.set(token, { orderId: o.id, txnId: t.id });
      t.result = 'PENDING';
      t.gatewayCode = 'PENDING';
      t.gatewayRecommendation = 'PROCEED';
      t.authenticationStatus = 'AUTHENTICATION_PENDING';
      t.payerInteraction = 'REQUIRED';
      t.redirectHtml = challengeRedirectHtml(origin, token);
    } else if (FRICTIONLESS_FAILED_CARDS.has(card.number)) {
      t.result = 'FAILURE';
      t.gatewayCode = 'DECLINED';
      t.gatewayRecommendation = 'DO_NOT_PROCEED';
      t.authenticationStatus = 'AUTHENTICATION_FAILED';
      t.payerInteraction = 'NOT_REQUIRED';
      t.redirectHtml = back('FAILURE', 'DO_NOT_PROCEED');
    } else {
      t.result = 'SUCCESS';
      t.gatewayCode = 'APPROVED';
      t.gatewayRecommendation = 'PROCEED';
      t.authenticationStatus = 'AUTHENTICATION_SUCCESSFUL';
      t.payerInteraction = 'NOT_REQUIRED';
      t.redirectHtml = back('SUCCESS', 'PROCEED');
    }
    o.authenticationStatus = t.authenticationStatus;
    o.status = authOrderStatus(t.authenticationStatus);
    notify(o, t);
    return transactionAnswer(o, t);
  }

  const authOrderStatus = (s: string | null) =>
    s === 'AUTHENTICATION_SUCCESSFUL'
      ? 'AUTHENTICATED'
      : s === 'AUTHENTICATION_FAILED'
        ? 'AUTHENTICATION_UNSUCCESSFUL'
        : 'AUTHENTICATION_INITIATED';

  function finishChallenge(token: string, approve: boolean) {
    const c = challenges.get(token);
    if (!c) throw new Refusal(400, 'INVALID_REQUEST', 'Unknown or finished challenge', 'creq');
    challenges.delete(token);
    const o = orders.get(c.orderId)!;
    const t = o.txns.get(c.txnId)!;
    t.result = approve ? 'SUCCESS' : 'FAILURE';
    t.gatewayCode = approve ? 'APPROVED' : 'DECLINED';
    t.gatewayRecommendation = approve ? 'PROCEED' : 'DO_NOT_PROCEED';
    t.authenticationStatus = approve ? 'AUTHENTICATION_SUCCESSFUL' : 'AUTHENTICATION_FAILED';
    o.authenticationStatus = t.authenticationStatus;
    o.status = authOrderStatus(t.authenticationStatus);
    notify(o, t);
    return { url: t.redirectResponseUrl!, fields: returnFields(o.id, t.id, t.result, t.gatewayRecommendation) };
  }

  /** The one-shot '5xx-not-created' fault: a 500 before anything is created. */
  function failedBeforeCreating(res: http.ServerResponse) {
    if (faults.nextTransaction !== '5xx-not-created') return;
    faults.nextTransaction = null;
    json(res, 500, { result: 'ERROR', error: { cause: 'SERVER_FAILED', explanation: 'Internal error (simulated)' } });
    throw new Answered();
  }

  async function pay(orderId: string, txnId: string, b: Record<string, any>, res: http.ServerResponse) {
    requireSchema('payRequest', b);
    failedBeforeCreating(res);
    const s = sessionOf(b.session.id);
    const card = cardOf(s);
    const o = orderFor(orderId, currencyOf(b.order.currency), true);
    const minor = minorOf(b.order.amount, o.currency);
    const t = newTxn(o, txnId, 'PAY', 'PAYMENT', o.currency);
    t.card = card;
    t.amount = b.order.amount;
    t.notificationUrl = b.order.notificationUrl ?? null;
    if (b.order.notificationUrl) o.notificationUrl = b.order.notificationUrl;
    o.amount = b.order.amount;
    const outcome = EXPIRY_OUTCOMES[`${card.expiryMonth}/${card.expiryYear}`] ?? {
      result: 'SUCCESS',
      code: 'APPROVED',
    };
    const authId: string | undefined = b.authentication?.transactionId;
    const auth = authId ? o.txns.get(authId) : undefined;
    if (authId && (!auth || auth.type !== 'AUTHENTICATION'))
      throw Object.assign(
        new Refusal(
          400,
          'INVALID_REQUEST',
          `Unable to find authentication '${authId}'`,
          'authentication.transactionId',
        ),
        {
          undo: () => o.txns.delete(txnId),
        },
      );
    if (auth && !['AUTHENTICATION_SUCCESSFUL', 'AUTHENTICATION_ATTEMPTED'].includes(auth.authenticationStatus ?? '')) {
      t.result = 'FAILURE';
      t.gatewayCode = 'AUTHENTICATION_FAILED';
    } else {
      t.result = outcome.result;
      t.gatewayCode = outcome.code;
    }
    if (t.result === 'SUCCESS') {
      o.captured += minor;
      o.status = 'CAPTURED';
    } else if (t.result === 'FAILURE') o.status = 'FAILED';
    await faulted(outcome.fault, res);
    notify(o, t);
    return transactionAnswer(o, t);
  }

  async function refund(orderId: string, txnId: string, b: Record<string, any>, res: http.ServerResponse) {
    requireSchema('refundRequest', b);
    failedBeforeCreating(res);
    const o = orderFor(orderId, currencyOf(b.transaction.currency), false);
    const minor = minorOf(b.transaction.amount, o.currency);
    if (o.txns.has(txnId)) newTxn(o, txnId, 'REFUND', 'REFUND', o.currency);
    if (minor > o.captured - o.refunded)
      throw new Refusal(
        400,
        'INVALID_REQUEST',
        'Requested refund amount exceeds the amount available',
        'transaction.amount',
      );
    const t = newTxn(o, txnId, 'REFUND', 'REFUND', o.currency);
    t.amount = b.transaction.amount;
    t.result = 'SUCCESS';
    t.gatewayCode = 'APPROVED';
    o.refunded += minor;
    o.status = o.refunded === o.captured ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
    await faulted(undefined, res);
    notify(o, t);
    return transactionAnswer(o, t);
  }

  function voidTxn(orderId: string, txnId: string, b: Record<string, any>) {
    requireSchema('voidRequest', b);
    const o = orders.get(orderId);
    if (!o) throw new Refusal(400, 'INVALID_REQUEST', `Unable to find order '${orderId}'`, 'orderId');
    const target = o.txns.get(b.transaction.targetTransactionId);
    if (!target || target.voided || !['PAYMENT', 'REFUND'].includes(target.type) || target.result !== 'SUCCESS')
      throw new Refusal(
        400,
        'INVALID_REQUEST',
        'The target transaction cannot be voided',
        'transaction.targetTransactionId',
      );
    const t = newTxn(o, txnId, 'VOID', `VOID_${target.type}`, o.currency);
    t.amount = target.amount;
    t.targetTransactionId = target.id;
    t.result = 'SUCCESS';
    t.gatewayCode = 'APPROVED';
    target.voided = true;
    const minor = decimalToMinor(target.amount ?? '0', o.currency) ?? 0;
    if (target.type === 'PAYMENT') o.captured -= minor;
    else o.refunded -= minor;
    o.status = o.captured === 0 ? 'CANCELLED' : o.status;
    notify(o, t);
    return transactionAnswer(o, t);
  }

  /** Applies a per-card fault or the one-shot fault of the control endpoint, after the transaction exists. */
  async function faulted(byCard: TransactionFault | undefined, res: http.ServerResponse) {
    const f = faults.nextTransaction ?? byCard;
    if (faults.nextTransaction) faults.nextTransaction = null;
    if (f === 'slow') await sleep(slowMs);
    if (f === '5xx-created') {
      json(res, 500, { result: 'ERROR', error: { cause: 'SERVER_FAILED', explanation: 'Internal error (simulated)' } });
      throw new Answered();
    }
  }

  // ---- sessions and hosted fields -----------------------------------------------------------

  function createSession(b: Record<string, any>) {
    requireSchema('createSessionRequest', b);
    const id = `SESSION0002${randomBytes(12).toString('hex').toUpperCase()}`;
    const s: Session = {
      id,
      version: 1,
      authenticationLimit: b.session?.authenticationLimit ?? 5,
      authentications: 0,
      order: {},
      fields: {},
      card: null,
    };
    sessions.set(id, s);
    return {
      merchant: opts.merchantId,
      result: 'SUCCESS',
      session: {
        aes256Key: randomBytes(32).toString('base64'),
        authenticationLimit: s.authenticationLimit,
        id,
        updateStatus: 'NO_UPDATE',
        version: versionOf(s),
      },
    };
  }
  const versionOf = (s: Session) => randomBytes(5).toString('hex').slice(0, 9) + String(s.version % 10);

  function updateSession(id: string, b: Record<string, any>) {
    requireSchema('updateSessionRequest', b);
    const s = sessionOf(id);
    s.order = { ...b.order };
    s.version++;
    return {
      merchant: opts.merchantId,
      order: { amount: num(b.order.amount), currency: b.order.currency, ...(b.order.id ? { id: b.order.id } : {}) },
      session: { id, updateStatus: 'SUCCESS', version: versionOf(s) },
      version: '100',
    };
  }

  function commitForm(s: Session) {
    const f = s.fields;
    const errors: Record<string, string> = {};
    const number = (f.number ?? '').replace(/[\s-]/g, '');
    if (!number) errors.cardNumber = 'missing';
    else if (!/^\d{12,19}$/.test(number) || !luhn(number)) errors.cardNumber = 'invalid';
    const csc = f.securityCode ?? '';
    if (f.securityCode !== undefined && csc !== '' && !/^\d{3,4}$/.test(csc)) errors.securityCode = 'invalid';
    const month = (f.expiryMonth ?? '').trim();
    if (!month) errors.expiryMonth = 'missing';
    else if (!/^(0?[1-9]|1[0-2])$/.test(month)) errors.expiryMonth = 'invalid';
    const year = (f.expiryYear ?? '').trim();
    if (!year) errors.expiryYear = 'missing';
    else if (!/^(\d{2}|20\d{2})$/.test(year)) errors.expiryYear = 'invalid';
    if (Object.keys(errors).length > 0)
      return { status: 'fields_in_error', session: { id: s.id }, errors, version: '100' };
    s.card = {
      number,
      expiryMonth: month.padStart(2, '0'),
      expiryYear: year.slice(-2),
      ...(csc ? { securityCode: csc } : {}),
    };
    s.fields = {};
    s.version++;
    return {
      status: 'ok',
      merchant: opts.merchantId,
      session: { id: s.id, updateStatus: 'SUCCESS', version: versionOf(s) },
      sourceOfFunds: maskedCard(s.card),
      version: '100',
    };
  }

  // ---- HTTP ---------------------------------------------------------------------------------

  class Answered extends Error {}

  function json(res: http.ServerResponse, status: number, body: unknown) {
    if (res.headersSent) return;
    res.writeHead(status, { 'Content-Type': 'application/json;charset=UTF-8' });
    res.end(JSON.stringify(body));
  }
  function html(
    res: http.ServerResponse,
    body: string,
    csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; form-action *; connect-src 'self'",
  ) {
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': csp,
      'Cache-Control': 'no-store',
    });
    res.end(body);
  }
  const readBody = (req: http.IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 1_000_000) req.destroy(new Error('too large'));
        else chunks.push(c);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  function parseJsonBody(text: string): Record<string, any> {
    if (text.trim() === '') return {};
    try {
      const v = JSON.parse(text) as unknown;
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, any>;
    } catch {
      throw new Refusal(400, 'INVALID_REQUEST', 'Request body is not valid JSON', undefined, 'INVALID');
    }
  }
  const form = (text: string) => Object.fromEntries(new URLSearchParams(text));

  function authorised(req: http.IncomingMessage, merchantId: string): boolean {
    const got = Buffer.from(req.headers.authorization ?? '');
    return merchantId === opts.merchantId && got.length === expectedAuth.length && timingSafeEqual(got, expectedAuth);
  }

  async function api(req: http.IncomingMessage, res: http.ServerResponse, merchantId: string, rest: string) {
    if (!authorised(req, merchantId)) {
      json(res, 401, { result: 'ERROR', error: { cause: 'INVALID_REQUEST', explanation: 'Invalid credentials.' } });
      return;
    }
    const method = req.method ?? 'GET';
    const body = method === 'GET' ? {} : parseJsonBody(await readBody(req));
    let m: RegExpExecArray | null;
    if (rest === '/session' && method === 'POST') return json(res, 201, createSession(body));
    if ((m = /^\/session\/([^/]+)$/.exec(rest)) && method === 'PUT') return json(res, 200, updateSession(m[1], body));
    if ((m = /^\/order\/([^/]+)\/transaction\/([^/]+)$/.exec(rest))) {
      const [orderId, txnId] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
      if (method === 'GET') {
        const o = orders.get(orderId);
        const t = o?.txns.get(txnId);
        if (!o || !t)
          throw new Refusal(
            400,
            'INVALID_REQUEST',
            `Unable to find transaction '${txnId}' on order '${orderId}'`,
            'transactionId',
          );
        return json(res, 200, transactionAnswer(o, t));
      }
      if (method !== 'PUT') throw new Refusal(405, 'INVALID_REQUEST', 'Method not allowed');
      const op = body.apiOperation;
      if (op === 'INITIATE_AUTHENTICATION') return json(res, 200, initiate(orderId, txnId, body));
      if (op === 'AUTHENTICATE_PAYER') return json(res, 200, authenticate(orderId, txnId, body));
      if (op === 'PAY') return json(res, 200, await pay(orderId, txnId, body, res));
      if (op === 'REFUND') return json(res, 200, await refund(orderId, txnId, body, res));
      if (op === 'VOID') return json(res, 200, voidTxn(orderId, txnId, body));
      throw new Refusal(
        400,
        'INVALID_REQUEST',
        `Value '${String(op)}' is invalid for apiOperation`,
        'apiOperation',
        op === undefined ? 'MISSING' : 'INVALID',
      );
    }
    if ((m = /^\/order\/([^/]+)$/.exec(rest)) && method === 'GET') {
      const o = orders.get(decodeURIComponent(m[1]));
      if (!o)
        throw new Refusal(400, 'INVALID_REQUEST', `Unable to find order '${decodeURIComponent(m[1])}'`, 'orderId');
      return json(res, 200, orderAnswer(o));
    }
    if (rest === '/information' || rest === '') return json(res, 200, { status: 'OPERATING' });
    json(res, 404, { result: 'ERROR', error: { cause: 'INVALID_REQUEST', explanation: 'No such operation' } });
  }

  async function formRoute(req: http.IncomingMessage, res: http.ServerResponse, m: RegExpExecArray, url: URL) {
    const [, version, merchantId, what, sessionId, action] = m;
    if (merchantId !== opts.merchantId) return json(res, 404, { status: 'system_error' });
    const base = `${origin}/form/version/${version}/merchant/${merchantId}`;
    if (what === 'session.js') {
      res.writeHead(200, { 'Content-Type': 'application/javascript; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(sessionJs(origin, version, merchantId, opts.formTimeoutMs ?? 10_000));
      return;
    }
    if (what === 'field') {
      const field = url.searchParams.get('field') as CardField;
      const sid = url.searchParams.get('session') ?? '';
      if (!CARD_FIELDS.includes(field) || !sessions.has(sid)) return json(res, 404, { status: 'system_error' });
      return html(res, fieldPage(base, sid, field));
    }
    const s = sessions.get(sessionId);
    if (req.method !== 'POST' || !s)
      return json(res, 404, { status: 'system_error', errors: { message: 'Unknown session' } });
    const body = parseJsonBody(await readBody(req));
    if (action === 'field') {
      const field = body.field as CardField;
      if (!CARD_FIELDS.includes(field) || typeof body.value !== 'string' || body.value.length > 64)
        return json(res, 400, { status: 'system_error' });
      s.fields[field] = body.value;
      return json(res, 200, { stored: true });
    }
    const fault = faults.nextFormUpdate;
    faults.nextFormUpdate = 'none';
    if (fault === 'system_error')
      return json(res, 200, {
        status: 'system_error',
        session: { id: s.id },
        errors: { message: 'System error message.' },
        version: '100',
      });
    if (fault === 'request_timeout') {
      await sleep((opts.formTimeoutMs ?? 10_000) + 1000);
      return json(res, 200, {
        status: 'request_timeout',
        session: { id: s.id },
        errors: { message: 'Request timeout error message.' },
      });
    }
    return json(res, 200, commitForm(s));
  }

  async function acs(req: http.IncomingMessage, res: http.ServerResponse, path: string) {
    const body = form(await readBody(req));
    if (path === '/acs/challenge' && req.method === 'POST') {
      if (!body.creq || !challenges.has(body.creq))
        throw new Refusal(400, 'INVALID_REQUEST', 'Unknown challenge', 'creq');
      return html(res, challengePage(body.creq), "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
    }
    if (path === '/acs/challenge/complete' && req.method === 'POST') {
      const back = finishChallenge(body.creq ?? '', body.outcome === 'approve');
      return html(
        res,
        returnPage(back.url, back.fields),
        "default-src 'none'; script-src 'unsafe-inline'; form-action *",
      );
    }
    json(res, 404, { error: 'not found' });
  }

  async function control(req: http.IncomingMessage, res: http.ServerResponse, path: string) {
    const method = req.method ?? 'GET';
    let m: RegExpExecArray | null;
    if (path === '/_sim/transactions' && method === 'GET') return json(res, 200, transactions());
    if (path === '/_sim/notifications' && method === 'GET') return json(res, 200, sent);
    if (path === '/_sim/refusals' && method === 'GET') return json(res, 200, refused);
    if (path === '/_sim/report' && method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/csv; charset=utf-8' });
      res.end(finances.report());
      return;
    }
    if (path === '/_sim/faults' && method === 'POST') {
      sim.setFaults(parseJsonBody(await readBody(req)) as MpgsSimFaults);
      return json(res, 200, faults);
    }
    if (path === '/_sim/reset' && method === 'POST') {
      sim.reset();
      return json(res, 200, { reset: true });
    }
    if ((m = /^\/_sim\/sessions\/([^/]+)\/card$/.exec(path)) && method === 'POST') {
      sim.putCard(m[1], parseJsonBody(await readBody(req)) as MpgsSimCard);
      return json(res, 200, { stored: true });
    }
    if ((m = /^\/_sim\/challenges\/([^/]+)\/([^/]+)$/.exec(path)) && method === 'POST') {
      const b = parseJsonBody(await readBody(req));
      return json(res, 200, sim.completeChallenge(m[1], m[2], b.outcome === 'approve'));
    }
    json(res, 404, { error: 'not found' });
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname;
    void (async () => {
      try {
        let m: RegExpExecArray | null;
        if ((m = API.exec(path))) await api(req, res, decodeURIComponent(m[2]), m[3]);
        else if ((m = FORM.exec(path))) await formRoute(req, res, m, url);
        else if (path.startsWith('/acs/')) await acs(req, res, path);
        else if (path.startsWith('/_sim/')) await control(req, res, path);
        else if (/^\/api\/rest\/version\/\d+\/information$/.test(path)) json(res, 200, { status: 'OPERATING' });
        else json(res, 404, { result: 'ERROR', error: { cause: 'INVALID_REQUEST', explanation: 'Not found' } });
        log(`${req.method} ${path} ${res.statusCode}`);
      } catch (err) {
        if (err instanceof Answered) return;
        if (err instanceof Refusal) {
          (err as Refusal & { undo?: () => void }).undo?.();
          refused.push({ path, explanation: err.message });
          log(`${req.method} ${path} refused: ${err.message}`);
          json(res, err.status, {
            result: 'ERROR',
            error: {
              cause: err.gatewayCause,
              explanation: err.message,
              ...(err.field ? { field: err.field } : {}),
              ...(err.validationType ? { validationType: err.validationType } : {}),
              supportCode: randomBytes(4).toString('hex'),
            },
          });
          return;
        }
        json(res, 500, { result: 'ERROR', error: { cause: 'SERVER_FAILED', explanation: (err as Error).message } });
      }
    })();
  });

  function transactions(): MpgsSimTransaction[] {
    return [...orders.values()].flatMap((o) =>
      [...o.txns.values()].map((t) => ({
        orderId: t.orderId,
        id: t.id,
        apiOperation: t.apiOperation,
        type: t.type,
        result: t.result,
        gatewayCode: t.gatewayCode,
        gatewayRecommendation: t.gatewayRecommendation,
        authenticationStatus: t.authenticationStatus,
        amount: t.amount,
        currency: t.currency,
        requests: t.requests,
        created: t.created,
      })),
    );
  }

  /** The report's rows: every PAYMENT, REFUND and VOID that ended, at its creation time. */
  function records(): MpgsReportRow[] {
    const out: MpgsReportRow[] = [];
    for (const o of orders.values())
      for (const t of o.txns.values()) {
        if (!['PAYMENT', 'REFUND', 'VOID_PAYMENT', 'VOID_REFUND'].includes(t.type)) continue;
        if (!['SUCCESS', 'FAILURE'].includes(t.result) || t.amount === null) continue;
        out.push({
          at: Date.parse(t.created),
          orderId: o.id,
          transactionId: t.id,
          type: t.type as MpgsReportRow['type'],
          result: t.result as MpgsReportRow['result'],
          amount: decimalToMinor(t.amount, t.currency) ?? 0,
          currency: t.currency,
        });
      }
    return out;
  }
  const finances = mpgsReport(records, { now });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  origin = `http://${opts.host ?? '127.0.0.1'}:${port}`;

  const sim: MpgsSimulator = {
    url: origin,
    port,
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    transactions,
    notifications: () => [...sent],
    refusals: () => [...refused],
    setFaults(f) {
      faults = { ...faults, ...Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) };
    },
    putCard(sessionId, card) {
      const s = sessions.get(sessionId);
      if (!s) throw new Refusal(404, 'INVALID_REQUEST', `Unable to find session '${sessionId}'`);
      s.card = { ...card, expiryYear: card.expiryYear.slice(-2), expiryMonth: card.expiryMonth.padStart(2, '0') };
    },
    completeChallenge(orderId, transactionId, approve) {
      const token = [...challenges.entries()].find(([, c]) => c.orderId === orderId && c.txnId === transactionId)?.[0];
      if (!token) throw new Refusal(404, 'INVALID_REQUEST', 'No pending challenge for this transaction');
      return finishChallenge(token, approve);
    },
    finances,
    reset() {
      sessions.clear();
      orders.clear();
      challenges.clear();
      sent.length = 0;
      refused.length = 0;
      faults = { nextTransaction: null, notifications: 'normal', lateMs: 2000, nextFormUpdate: 'none' };
    },
  };
  return sim;
}
