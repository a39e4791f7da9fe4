import type { AmountFormat, WhenUnavailable } from './settings';
import type { CardDetails } from '../../db/rows';
import type { Currency } from '../../vocabulary';
import { CURRENCIES } from '../../vocabulary';
import { decimalToMinor, minorToDecimal } from '../amounts';

/**
 * What goes on the wire to the Mastercard Gateway (REST API version 100) and what is read back
 * (README.md in this folder). Requests are plain objects, checked against ./schema before they
 * leave; answers are read only after they passed ./schema.
 */

// ---- ids ----------------------------------------------------------------------------------

/** order.id / transaction.id: 1-40 characters; we use letters, digits, '_' and '-' only. */
const GATEWAY_ID = /^[0-9A-Za-z_-]{1,40}$/;

/** The gateway order of a payment is the payment's id itself (`pay_<uuid>`, 40 characters). */
export function orderIdOf(paymentId: string): string {
  if (!GATEWAY_ID.test(paymentId)) throw new RangeError(`payment id ${paymentId} cannot be a gateway order id`);
  return paymentId;
}

/** The attempt-th authentication of an order (INITIATE_AUTHENTICATION then AUTHENTICATE_PAYER): `auth-1`, … */
export const authTransactionId = (attempt: number) => transactionId('auth', attempt);
/** The attempt-th PAY of an order: `pay-1`, … A retry of the same attempt sends the same id. */
export const payTransactionId = (attempt: number) => transactionId('pay', attempt);

function transactionId(kind: string, attempt: number): string {
  if (!Number.isSafeInteger(attempt) || attempt < 1 || attempt > 9999)
    throw new RangeError(`attempt ${attempt} is not 1 to 9999`);
  return `${kind}-${attempt}`;
}

/** A refund's transaction id is our refund's id (`re_<uuid>`, 39 characters): one gateway REFUND per refund. */
export function refundTransactionId(refundId: string): string {
  if (!GATEWAY_ID.test(refundId)) throw new RangeError(`refund id ${refundId} cannot be a gateway transaction id`);
  return refundId;
}

/** The VOID of a transaction: `void-<its id>` (at most 40 characters). */
export function voidTransactionId(targetTransactionId: string): string {
  const id = `void-${targetTransactionId}`;
  if (!GATEWAY_ID.test(id)) throw new RangeError(`cannot void ${targetTransactionId}: id too long`);
  return id;
}

// ---- amounts ------------------------------------------------------------------------------

/**
 * 'fixed': the currency's every decimal ("10.50", as the gateway's examples and sample modules
 * write it); 'minimal': no trailing zeros ("10.5"). README unclear point 1.
 */
export type { AmountFormat } from './settings';

export function amountOnWire(minor: number, currency: Currency, format: AmountFormat = 'fixed'): string {
  return minorToDecimal(minor, currency, format === 'fixed');
}

/**
 * An answer's amount (a decimal string, or a JSON number as the gateway's JSON examples show) as
 * minor units, exactly; undefined when it is not a plain decimal the currency can carry. A JSON
 * number is read from its shortest text (what JSON.parse kept), never multiplied as a float.
 */
export function amountFromWire(value: unknown, currency: Currency): number | undefined {
  if (typeof value === 'string') return decimalToMinor(value, currency);
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) {
    const text = String(value);
    return /e/i.test(text) ? undefined : decimalToMinor(text, currency);
  }
  return undefined;
}

export function ourCurrency(value: unknown): Currency | undefined {
  return CURRENCIES.find((c) => c === value);
}

// ---- requests -----------------------------------------------------------------------------

/** The payer's browser, as the checkout page reads it (3-D Secure guide, step 2: device.*). */
export interface BrowserDetails {
  /** the User-Agent header */
  userAgent: string;
  /** the Accept header of the page request */
  acceptHeaders: string;
  colorDepth: number;
  javaEnabled: boolean;
  /** navigator.language, e.g. "fr-CD" */
  language: string;
  screenHeight: number;
  screenWidth: number;
  /** Date.getTimezoneOffset(): minutes from local time to UTC */
  timeZone: number;
  challengeWindowSize?: '250_X_400' | '390_X_400' | '500_X_600' | '600_X_400' | 'FULL_SCREEN';
  ipAddress?: string;
}

export const createSessionBody = (authenticationLimit?: number) =>
  authenticationLimit === undefined ? {} : { session: { authenticationLimit } };

export function updateSessionBody(
  minor: number,
  currency: Currency,
  orderId: string,
  format: AmountFormat,
): Record<string, unknown> {
  return { order: { amount: amountOnWire(minor, currency, format), currency, id: orderId } };
}

export function initiateAuthenticationBody(
  sessionId: string,
  currency: Currency,
  acceptVersions: '3DS2' | '3DS1,3DS2',
): Record<string, unknown> {
  return {
    apiOperation: 'INITIATE_AUTHENTICATION',
    authentication: { acceptVersions, channel: 'PAYER_BROWSER', purpose: 'PAYMENT_TRANSACTION' },
    order: { currency },
    session: { id: sessionId },
  };
}

export function authenticatePayerBody(
  sessionId: string,
  minor: number,
  currency: Currency,
  browser: BrowserDetails,
  redirectResponseUrl: string,
  format: AmountFormat,
): Record<string, unknown> {
  return {
    apiOperation: 'AUTHENTICATE_PAYER',
    authentication: { redirectResponseUrl },
    device: {
      browser: browser.userAgent.slice(0, 255),
      ...(browser.ipAddress ? { ipAddress: browser.ipAddress } : {}),
      browserDetails: {
        '3DSecureChallengeWindowSize': browser.challengeWindowSize ?? 'FULL_SCREEN',
        acceptHeaders: browser.acceptHeaders.slice(0, 2048) || '*/*',
        colorDepth: browser.colorDepth,
        javaEnabled: browser.javaEnabled,
        language: browser.language.slice(0, 8),
        screenHeight: browser.screenHeight,
        screenWidth: browser.screenWidth,
        timeZone: browser.timeZone,
      },
    },
    order: { amount: amountOnWire(minor, currency, format), currency },
    session: { id: sessionId },
  };
}

export interface PayInput {
  sessionId: string;
  minor: number;
  currency: Currency;
  /** the AUTHENTICATE_PAYER transaction id; absent when the payment is not authenticated */
  authenticationTransactionId?: string;
  /** order.notificationUrl, when the Merchant Administration one is not used */
  notificationUrl?: string;
  /** order.reference (what the merchant's statement shows); at most 200 characters */
  reference?: string;
}

export function payBody(p: PayInput, format: AmountFormat): Record<string, unknown> {
  return {
    apiOperation: 'PAY',
    ...(p.authenticationTransactionId ? { authentication: { transactionId: p.authenticationTransactionId } } : {}),
    order: {
      amount: amountOnWire(p.minor, p.currency, format),
      currency: p.currency,
      ...(p.reference ? { reference: p.reference.slice(0, 200) } : {}),
      ...(p.notificationUrl ? { notificationUrl: p.notificationUrl } : {}),
    },
    session: { id: p.sessionId },
    sourceOfFunds: { type: 'CARD' },
  };
}

export function refundBody(minor: number, currency: Currency, format: AmountFormat): Record<string, unknown> {
  return { apiOperation: 'REFUND', transaction: { amount: amountOnWire(minor, currency, format), currency } };
}

export const voidBody = (targetTransactionId: string) => ({
  apiOperation: 'VOID',
  transaction: { targetTransactionId },
});

// ---- answers ------------------------------------------------------------------------------

export type GatewayResult = 'SUCCESS' | 'PENDING' | 'FAILURE' | 'UNKNOWN' | 'ERROR';

/** A transaction answer (or a notification, or one transaction of an order), read. */
export interface TransactionView {
  result: GatewayResult;
  gatewayCode: string;
  gatewayRecommendation: string | null;
  orderId: string;
  transactionId: string;
  /** AUTHENTICATION, PAYMENT, REFUND, VOID_PAYMENT, … */
  type: string | null;
  /** the transaction's amount in minor units (else the order's); null when absent or unreadable */
  amount: number | null;
  /** the transaction's currency (else the order's); null when not one of ours */
  currency: Currency | null;
  orderStatus: string | null;
  totalCaptured: number | null;
  totalRefunded: number | null;
  authenticationStatus: string | null;
  payerInteraction: string | null;
  /** authentication.redirect.html: to insert in the payer's page */
  redirectHtml: string | null;
  /** sourceOfFunds.provided.card: brand, last 4 digits and expiry only (never the masked number); null when absent or unreadable */
  card: CardDetails | null;
}

interface RawTransaction {
  result: GatewayResult;
  response: { gatewayCode: string; gatewayRecommendation?: string };
  order: {
    id: string;
    amount?: unknown;
    currency: string;
    status?: string;
    authenticationStatus?: string;
    totalCapturedAmount?: unknown;
    totalRefundedAmount?: unknown;
  };
  transaction: { id: string; type?: string; amount?: unknown; currency?: string; authenticationStatus?: string };
  authentication?: { payerInteraction?: string; redirect?: { html?: string } };
  sourceOfFunds?: { provided?: { card?: RawCard } };
}

interface RawCard {
  brand?: string;
  number?: string;
  expiry?: { month?: string | number; year?: string | number };
}

/** The gateway's card brands (sourceOfFunds.provided.card.brand) in ours (shared/cards/sandbox/cards.ts, brandOf). */
const BRANDS: Readonly<Record<string, string>> = { VISA: 'visa', MASTERCARD: 'mastercard', AMEX: 'amex' };

/**
 * The card of a transaction answer, as the payment shows it (docs/decisions.md#cards-hosted-checkout):
 * its brand, the last 4 digits of the masked number (512345xxxxxx0008) and its expiry; nothing else
 * of the number is kept. Anything missing or unreadable: null (the payment shows no card).
 */
export function cardOf(raw: RawCard | undefined): CardDetails | null {
  if (!raw) return null;
  const last4 = /([0-9]{4})$/.exec(raw.number ?? '')?.[1];
  const month = Number(raw.expiry?.month);
  const year = Number(raw.expiry?.year);
  if (!last4 || !Number.isInteger(month) || month < 1 || month > 12 || !Number.isInteger(year) || year < 0) return null;
  if (year > 99 && (year < 2000 || year > 2099)) return null;
  return {
    brand: BRANDS[(raw.brand ?? '').toUpperCase()] ?? 'unknown',
    last4,
    exp_month: month,
    exp_year: year > 99 ? year : 2000 + year,
  };
}

/** Reads an answer that passed the transactionAnswer schema. */
export function readTransaction(body: unknown): TransactionView {
  const t = body as RawTransaction;
  const currency = ourCurrency(t.transaction.currency ?? t.order.currency) ?? null;
  const amountOf = (v: unknown) => (currency && v !== undefined ? (amountFromWire(v, currency) ?? null) : null);
  return {
    result: t.result,
    gatewayCode: t.response.gatewayCode,
    gatewayRecommendation: t.response.gatewayRecommendation ?? null,
    orderId: t.order.id,
    transactionId: t.transaction.id,
    type: t.transaction.type ?? null,
    amount: amountOf(t.transaction.amount ?? t.order.amount),
    currency,
    orderStatus: t.order.status ?? null,
    totalCaptured: amountOf(t.order.totalCapturedAmount),
    totalRefunded: amountOf(t.order.totalRefundedAmount),
    authenticationStatus: t.transaction.authenticationStatus ?? t.order.authenticationStatus ?? null,
    payerInteraction: t.authentication?.payerInteraction ?? null,
    redirectHtml: t.authentication?.redirect?.html ?? null,
    card: cardOf(t.sourceOfFunds?.provided?.card),
  };
}

export interface OrderView {
  orderId: string;
  result: GatewayResult;
  amount: number | null;
  currency: Currency | null;
  status: string | null;
  authenticationStatus: string | null;
  totalCaptured: number | null;
  totalRefunded: number | null;
  transactions: TransactionView[];
}

/** Reads an answer that passed the orderAnswer schema. */
export function readOrder(body: unknown): OrderView {
  const o = body as {
    id: string;
    result: GatewayResult;
    amount?: unknown;
    currency: string;
    status?: string;
    authenticationStatus?: string;
    totalCapturedAmount?: unknown;
    totalRefundedAmount?: unknown;
    transaction?: unknown[];
  };
  const currency = ourCurrency(o.currency) ?? null;
  const amountOf = (v: unknown) => (currency && v !== undefined ? (amountFromWire(v, currency) ?? null) : null);
  return {
    orderId: o.id,
    result: o.result,
    amount: amountOf(o.amount),
    currency,
    status: o.status ?? null,
    authenticationStatus: o.authenticationStatus ?? null,
    totalCaptured: amountOf(o.totalCapturedAmount),
    totalRefunded: amountOf(o.totalRefundedAmount),
    transactions: (o.transaction ?? []).map(readTransaction),
  };
}

// ---- 3-D Secure ---------------------------------------------------------------------------

/**
 * What to do after an authentication answer or retrieve (3-D Secure guide:
 * https://developer.mastercard.com/mastercard-gateway/documentation/security-and-fraud/authentication/3d-secure-auth/3ds-payer-auth-api/).
 */
export type AuthenticationDecision =
  /** INITIATE_AUTHENTICATION said AUTHENTICATION_AVAILABLE: send AUTHENTICATE_PAYER */
  | { next: 'authenticate' }
  /** a challenge: insert `html` (authentication.redirect.html) in the page; re-read on return */
  | { next: 'challenge'; html: string }
  /** pay; `authenticated`: with authentication.transactionId */
  | { next: 'pay'; authenticated: boolean }
  | { next: 'fail'; failureCode: 'authentication-failed'; why: string }
  | { next: 'unknown'; why: string };

export type { WhenUnavailable } from './settings';

const PAYABLE = new Set(['AUTHENTICATION_SUCCESSFUL', 'AUTHENTICATION_ATTEMPTED', 'AUTHENTICATION_EXEMPT']);
const FAILED = new Set(['AUTHENTICATION_FAILED', 'AUTHENTICATION_REJECTED']);
const UNAVAILABLE = new Set([
  'AUTHENTICATION_NOT_SUPPORTED',
  'AUTHENTICATION_UNAVAILABLE',
  'AUTHENTICATION_NOT_IN_EFFECT',
]);

export function decideAuthentication(t: TransactionView, whenUnavailable: WhenUnavailable): AuthenticationDecision {
  const status = t.authenticationStatus;
  const rec = t.gatewayRecommendation;
  if (t.result === 'ERROR' || t.result === 'UNKNOWN') return { next: 'unknown', why: `result ${t.result}` };
  // anything but PROCEED (DO_NOT_PROCEED, RESUBMIT_WITH_ALTERNATIVE_PAYMENT_DETAILS, a new word) stops the payment
  if (rec !== null && rec !== 'PROCEED')
    return { next: 'fail', failureCode: 'authentication-failed', why: `gatewayRecommendation ${rec}` };
  if (status === null) return { next: 'unknown', why: 'no authenticationStatus' };
  if (FAILED.has(status)) return { next: 'fail', failureCode: 'authentication-failed', why: status };
  if (PAYABLE.has(status)) {
    if (t.result === 'FAILURE')
      return { next: 'fail', failureCode: 'authentication-failed', why: `${status} with result FAILURE` };
    return { next: 'pay', authenticated: true };
  }
  if (status === 'AUTHENTICATION_AVAILABLE') return { next: 'authenticate' };
  if (status === 'AUTHENTICATION_PENDING')
    return t.redirectHtml
      ? { next: 'challenge', html: t.redirectHtml }
      : { next: 'unknown', why: 'pending without redirect html' };
  if (UNAVAILABLE.has(status)) {
    if (whenUnavailable === 'proceed' && rec === 'PROCEED') return { next: 'pay', authenticated: false };
    return { next: 'fail', failureCode: 'authentication-failed', why: `${status} (3-D Secure required)` };
  }
  return { next: 'unknown', why: `authenticationStatus ${status}` };
}
