import { createHash } from 'node:crypto';
import type { Currency, Direction, Operator } from '../../vocabulary';
import { CURRENCIES } from '../../vocabulary';
import { decimalToMinor, minorToDecimal } from '../amounts';
import { FAILURE_CODES, type FailureCode } from '../failureCodes';
import type { ProviderObjectKind } from '../types';

/**
 * pawaPay Merchant API v2: the words of its wire format and their mapping onto ours, in one place
 * (README.md in this folder lists the references and every choice made where they are unclear).
 * Pure functions: the connector, its simulator and the tests share them.
 */

export const DOCS = {
  deposits: 'https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit',
  depositStatus: 'https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status',
  depositCallback: 'https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback',
  payouts: 'https://docs.pawapay.io/v2/api-reference/payouts/initiate-payout',
  refunds: 'https://docs.pawapay.io/v2/api-reference/refunds/initiate-refund',
  activeConf: 'https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration',
  availability: 'https://docs.pawapay.io/v2/api-reference/toolkit/availability',
  publicKeys: 'https://docs.pawapay.io/v2/api-reference/toolkit/public-keys',
  signatures: 'https://docs.pawapay.io/v2/docs/signatures',
  failureCodes: 'https://docs.pawapay.io/v2/docs/failure_codes',
  testNumbers: 'https://docs.pawapay.io/v2/docs/test_numbers',
  providers: 'https://docs.pawapay.io/v2/docs/providers',
} as const;

/** pawaPay's provider codes of the DRC (https://docs.pawapay.io/v2/docs/providers). Africell: not served. */
export type PawapayProvider = 'VODACOM_MPESA_COD' | 'AIRTEL_COD' | 'ORANGE_COD';
export const PROVIDER_OF: Partial<Record<Operator, PawapayProvider>> = {
  vodacom: 'VODACOM_MPESA_COD',
  airtel: 'AIRTEL_COD',
  orange: 'ORANGE_COD',
};
export const OPERATOR_OF: Record<PawapayProvider, Operator> = {
  VODACOM_MPESA_COD: 'vodacom',
  AIRTEL_COD: 'airtel',
  ORANGE_COD: 'orange',
};
export const PAWAPAY_PROVIDERS = Object.keys(OPERATOR_OF) as PawapayProvider[];
export const SERVED_OPERATORS: Operator[] = ['vodacom', 'airtel', 'orange'];

/** pawaPay's operation types (active-conf, availability) and our directions. */
export type OperationType = 'DEPOSIT' | 'PAYOUT' | 'REFUND';
export const OPERATION_TYPE_OF: Record<Direction, OperationType> = {
  collection: 'DEPOSIT',
  payout: 'PAYOUT',
  refund: 'REFUND',
};
export const DIRECTION_OF: Record<OperationType, Direction> = {
  DEPOSIT: 'collection',
  PAYOUT: 'payout',
  REFUND: 'refund',
};

/** The three kinds of transaction and where they live (paths, id field, our id prefix). */
export interface KindWire {
  kind: ProviderObjectKind;
  path: '/v2/deposits' | '/v2/payouts' | '/v2/refunds';
  idField: 'depositId' | 'payoutId' | 'refundId';
  prefix: 'pay_' | 'po_' | 're_';
}
export const KINDS: Record<'payment' | 'payout' | 'refund', KindWire> = {
  payment: { kind: 'payment', path: '/v2/deposits', idField: 'depositId', prefix: 'pay_' },
  payout: { kind: 'payout', path: '/v2/payouts', idField: 'payoutId', prefix: 'po_' },
  refund: { kind: 'refund', path: '/v2/refunds', idField: 'refundId', prefix: 're_' },
};

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** Our id (pay_<uuid v4>) → pawaPay's id (the UUID itself, unchanged); undefined when it is not of that form. */
export function pawapayId(ourId: string, wire: KindWire): string | undefined {
  if (!ourId.startsWith(wire.prefix)) return undefined;
  const uuid = ourId.slice(wire.prefix.length);
  return UUID.test(uuid) ? uuid : undefined;
}

/** pawaPay's id → our id (deterministic: the inverse of pawapayId). */
export function ourId(pawapayUuid: string, wire: KindWire): string {
  return wire.prefix + pawapayUuid;
}

export function isUuidV4(text: string): boolean {
  return UUID.test(text);
}

/** Ours: 243 + 9 digits. pawaPay's phoneNumber is the MSISDN with its country code and no '+': the same string. */
export function pawapayPhone(msisdn: string): string | undefined {
  return /^243\d{9}$/.test(msisdn) ? msisdn : undefined;
}

/** 243812345678 → 243*****5678: what a log line may show of a number. */
export function maskPhone(msisdn: string): string {
  return msisdn.length > 7 ? `${msisdn.slice(0, 3)}${'*'.repeat(msisdn.length - 7)}${msisdn.slice(-4)}` : '****';
}

/** Minor units → pawaPay's amount string, no trailing zeros ("100.5", "100"). */
export function toPawapayAmount(minor: number, currency: Currency): string {
  return minorToDecimal(minor, currency, false);
}

/** An echoed amount ("100.00", "100.5", "100") → minor units, exactly; undefined if it is not a plain decimal of the currency. */
export function fromPawapayAmount(text: unknown, currency: Currency): number | undefined {
  return typeof text === 'string' ? decimalToMinor(text, currency) : undefined;
}

export function ourCurrency(text: unknown): Currency | undefined {
  return typeof text === 'string' && (CURRENCIES as readonly string[]).includes(text) ? (text as Currency) : undefined;
}

/** decimalsInAmount of active-conf → a count of decimals. */
export function decimalsOf(text: unknown): number | undefined {
  switch (text) {
    case 'NONE':
      return 0;
    case 'ONE_PLACE':
      return 1;
    case 'TWO_PLACES':
      return 2;
    default:
      return undefined;
  }
}

/**
 * pawaPay's failure codes (https://docs.pawapay.io/v2/docs/failure_codes) → our vocabulary
 * (shared/providers/failureCodes.ts). A code not listed becomes `provider-failed`. Where one code
 * means different things per operation, `forOperation` below decides.
 */
export const FAILURE_MAP: Record<string, FailureCode> = {
  // transaction failures
  PAYER_NOT_FOUND: 'payer-not-found',
  RECIPIENT_NOT_FOUND: 'payer-not-found',
  PAYMENT_NOT_APPROVED: 'client-refused',
  INSUFFICIENT_BALANCE: 'insufficient-funds',
  PAYER_LIMIT_REACHED: 'limit-reached',
  RECIPIENT_LIMIT_REACHED: 'limit-reached',
  WALLET_LIMIT_REACHED: 'limit-reached',
  RECIPIENT_NOT_ALLOWED_TO_RECEIVE: 'recipient-inactive',
  TRANSACTION_ALREADY_IN_PROCESS: 'provider-refused',
  PAYMENT_IN_PROGRESS: 'provider-refused',
  PROVIDER_TEMPORARILY_UNAVAILABLE: 'operator-unavailable',
  MANUALLY_CANCELLED: 'provider-refused',
  UNSPECIFIED_FAILURE: 'provider-failed',
  OTHER_ERROR: 'provider-failed',
  // rejections at initiation
  AMOUNT_OUT_OF_BOUNDS: 'amount-out-of-bounds',
  AMOUNT_TOO_SMALL: 'amount-out-of-bounds',
  AMOUNT_TOO_LARGE: 'amount-out-of-bounds',
  INVALID_AMOUNT: 'provider-refused',
  INVALID_PHONE_NUMBER: 'provider-refused',
  INVALID_CURRENCY: 'provider-refused',
  INVALID_PROVIDER: 'provider-refused',
  INVALID_COUNTRY: 'provider-refused',
  DEPOSITS_NOT_ALLOWED: 'operator-unavailable',
  PAYOUTS_NOT_ALLOWED: 'operator-unavailable',
  REFUNDS_NOT_ALLOWED: 'operator-unavailable',
  INVALID_INPUT: 'provider-refused',
  MISSING_PARAMETER: 'provider-refused',
  UNSUPPORTED_PARAMETER: 'provider-refused',
  INVALID_PARAMETER: 'provider-refused',
  DUPLICATE_METADATA_FIELD: 'provider-refused',
  DEPOSIT_NOT_FOUND: 'provider-refused',
  DEPOSIT_NOT_COMPLETED: 'provider-refused',
  ALREADY_REFUNDED: 'provider-refused',
  REFUND_AMOUNT_TOO_LARGE: 'amount-out-of-bounds',
};

/** Codes that say our own credentials or signature were refused: another attempt may succeed once the configuration is fixed. */
export const CREDENTIAL_CODES = new Set([
  'NO_AUTHENTICATION',
  'AUTHENTICATION_ERROR',
  'AUTHORISATION_ERROR',
  'HTTP_SIGNATURE_ERROR',
]);

/** Codes that leave the outcome unknown (never a failure: the status endpoint decides). */
export const UNKNOWN_OUTCOME_CODES = new Set(['UNKNOWN_ERROR']);

export function mapFailure(
  code: unknown,
  kind: ProviderObjectKind,
  message?: unknown,
): { failureCode: FailureCode; failureMessage: string } {
  const text = typeof code === 'string' ? code : '';
  let ours: FailureCode = FAILURE_MAP[text] ?? 'provider-failed';
  // a payout's INSUFFICIENT_BALANCE is the merchant's pawaPay wallet, not the client's
  if (text === 'INSUFFICIENT_BALANCE' && kind !== 'payment') ours = 'provider-refused';
  const theirs = typeof message === 'string' && message.length > 0 ? message.slice(0, 300) : FAILURE_CODES[ours];
  return { failureCode: ours, failureMessage: text ? `${theirs} (pawaPay ${text})` : theirs };
}

/** Transaction statuses of the status endpoints and callbacks. */
export const FINAL_STATUSES = new Set(['COMPLETED', 'FAILED']);
export const OPEN_STATUSES = new Set(['ACCEPTED', 'ENQUEUED', 'SUBMITTED', 'PROCESSING', 'IN_RECONCILIATION']);

/** A stable id for a callback pawaPay gives no id of its own: a digest of the transaction's kind, id and status (a repeat keeps it). */
export function callbackEventId(kind: ProviderObjectKind, pawapayUuid: string, status: string): string {
  return (
    'ppcb_' + createHash('sha256').update(`${kind}:${pawapayUuid.toLowerCase()}:${status}`).digest('hex').slice(0, 32)
  );
}
