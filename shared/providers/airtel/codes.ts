import type { FailureCode } from '../failureCodes';

/**
 * Airtel's codes and what they mean for us. Sources: the Open API reference's "Response codes"
 * and "Transaction status" tables, https://developers.airtel.africa/documentation (Collection
 * API: DP008000010xx; Disbursement API: DP009000010xx; ESB0000xx result codes; statuses TS, TF,
 * TA, TIP, TE). The README has the same table.
 *
 * Each code is one of:
 * - `ok`: Airtel took the request (success, or in process: the outcome comes later);
 * - `unknown`: ambiguous, timed out on Airtel's side, "something went wrong": ask before anything;
 * - `duplicate`: Airtel already has this transaction.id: ask, never resend;
 * - `not_found`: the enquiry found no such transaction;
 * - `auth`: our credentials or signature were refused (worth another attempt once fixed);
 * - `failed`: a definite refusal, mapped onto our vocabulary.
 */
export type CodeClass =
  | { class: 'ok' }
  | { class: 'unknown' }
  | { class: 'duplicate' }
  | { class: 'not_found' }
  | { class: 'auth' }
  | { class: 'failed'; failureCode: FailureCode; state?: 'expired' };

const ok = { class: 'ok' } as const;
const unknown = { class: 'unknown' } as const;
const duplicate = { class: 'duplicate' } as const;
const notFound = { class: 'not_found' } as const;
const auth = { class: 'auth' } as const;
const failed = (failureCode: FailureCode, state?: 'expired'): CodeClass => ({
  class: 'failed',
  failureCode,
  ...(state ? { state } : {}),
});

/** `status.response_code` of the Collection API (USSD push, enquiry, refund). */
export const COLLECTION_CODES: Record<string, { meaning: string; is: CodeClass }> = {
  DP00800001000: { meaning: 'Ambiguous: still processing, do a transaction enquiry', is: unknown },
  DP00800001001: { meaning: 'Success', is: ok },
  DP00800001002: { meaning: 'Incorrect PIN entered', is: failed('client-refused') },
  DP00800001003: { meaning: 'Exceeds the wallet transaction limit', is: failed('limit-reached') },
  DP00800001004: { meaning: 'Invalid amount (below the minimum allowed)', is: failed('amount-out-of-bounds') },
  DP00800001005: { meaning: 'Transaction id invalid: the user did not enter the PIN', is: failed('client-timeout') },
  DP00800001006: { meaning: 'In process: check after some time', is: ok },
  DP00800001007: { meaning: 'Not enough balance', is: failed('insufficient-funds') },
  DP00800001008: { meaning: 'Refused', is: failed('provider-refused') },
  DP00800001009: { meaning: 'Do not honor (generic refusal)', is: failed('provider-refused') },
  DP00800001010: {
    meaning: 'Transaction not permitted: barred or not registered on Airtel Money',
    is: failed('wallet-limited'),
  },
  DP00800001024: { meaning: 'Transaction timed out', is: failed('client-timeout') },
  DP00800001025: { meaning: 'Transaction not found', is: notFound },
  DP00800001026: { meaning: 'Forbidden: x-signature and payload did not match', is: auth },
  DP00800001029: { meaning: 'Transaction expired', is: failed('client-timeout', 'expired') },
};

/** `status.response_code` of the Disbursement API (payouts and their enquiry). */
export const DISBURSEMENT_CODES: Record<string, { meaning: string; is: CodeClass }> = {
  DP00900001000: { meaning: 'Ambiguous: still processing, do a transaction enquiry', is: unknown },
  DP00900001001: { meaning: 'Success', is: ok },
  DP00900001003: { meaning: 'Maximum transaction limit reached for the day', is: failed('limit-reached') },
  DP00900001004: { meaning: 'Amount out of range of the defined limits', is: failed('amount-out-of-bounds') },
  DP00900001005: { meaning: 'Transaction failed', is: failed('provider-failed') },
  DP00900001006: { meaning: 'In process', is: ok },
  DP00900001007: { meaning: 'Not enough funds in the (merchant) account', is: failed('insufficient-funds') },
  DP00900001009: { meaning: 'Initiatee of the transaction is invalid', is: failed('provider-refused') },
  DP00900001010: { meaning: 'Payer is not an allowed user', is: failed('provider-refused') },
  // "already exists in this system": it may be our own earlier attempt, so ask, as for a duplicate id
  DP00900001011: { meaning: 'Transaction with similar information already exists', is: duplicate },
  DP00900001012: { meaning: 'Mobile number entered is incorrect', is: failed('recipient-inactive') },
  DP00900001013: { meaning: 'Refused', is: failed('provider-refused') },
  DP00900001014: { meaning: 'Timed out: may be processed or failed, do a transaction enquiry', is: unknown },
  DP00900001015: { meaning: 'Transaction not found', is: notFound },
  DP00900001016: { meaning: 'Forbidden: x-signature and payload did not match', is: auth },
  DP00900001017: { meaning: 'Duplicate transaction id: enquire for the actual transaction', is: duplicate },
  DP00900001018: { meaning: 'Forbidden', is: auth },
};

/** `status.result_code` (ESB), read when the response code says nothing we know. */
export const ESB_CODES: Record<string, { meaning: string; is: CodeClass }> = {
  ESB000001: { meaning: 'Something went wrong', is: unknown },
  ESB000004: { meaning: 'An error occurred while initiating the payment', is: unknown },
  ESB000008: { meaning: 'Field validation', is: failed('provider-refused') },
  ESB000010: { meaning: 'Success', is: ok },
  ESB000011: { meaning: 'Failed', is: failed('provider-failed') },
  ESB000014: { meaning: 'An error occurred while fetching the transaction status', is: unknown },
  ESB000033: { meaning: 'Invalid MSISDN length', is: failed('payer-not-found') },
  ESB000034: { meaning: 'Invalid country name', is: failed('provider-refused') },
  ESB000035: { meaning: 'Invalid currency code', is: failed('provider-refused') },
  ESB000036: { meaning: 'Invalid MSISDN length (should start with 0)', is: failed('payer-not-found') },
  ESB000039: {
    meaning: 'Vendor is not configured to do transactions in the country',
    is: failed('operator-unavailable'),
  },
  ESB000041: { meaning: 'External transaction id already exists', is: duplicate },
  ESB000045: { meaning: 'No transaction found with the provided transaction id', is: notFound },
};

/**
 * Router codes of the gateway in front of the APIs (PIN and routing checks), as Airtel's country
 * references list them (e.g. https://developers.airtel.africa/documentation, "Error codes").
 */
export const ROUTER_CODES: Record<string, { meaning: string; is: CodeClass }> = {
  ROUTER001: { meaning: 'Wallet not configured', is: failed('operator-unavailable') },
  ROUTER005: { meaning: 'Country route not configured', is: failed('operator-unavailable') },
  ROUTER006: { meaning: 'Invalid country', is: failed('provider-refused') },
  // a wrong PIN is never retried on its own: repeated wrong PINs may lock the account
  ROUTER114: { meaning: 'PIN not provided or invalid', is: failed('provider-refused') },
  ROUTER115: { meaning: 'Encrypted PIN could not be decrypted', is: failed('provider-refused') },
  ROUTER116: { meaning: 'Incorrect PIN', is: failed('provider-refused') },
  ROUTER117: { meaning: 'Request timeout', is: unknown },
};

/** `data.transaction.status` (and a callback's `status_code`). */
export type TransactionStatus = 'TS' | 'TF' | 'TA' | 'TIP' | 'TE';
export const TRANSACTION_STATUSES: Record<TransactionStatus, string> = {
  TS: 'Transaction success',
  TF: 'Transaction failed',
  TA: 'Transaction ambiguous',
  TIP: 'Transaction in progress',
  TE: 'Transaction expired',
};

/** What a response's codes say; the response code first, then the ESB result code; undefined: neither is known. */
export function classify(responseCode: unknown, resultCode: unknown): CodeClass | undefined {
  if (typeof responseCode === 'string') {
    const known = COLLECTION_CODES[responseCode] ?? DISBURSEMENT_CODES[responseCode] ?? ROUTER_CODES[responseCode];
    if (known) return known.is;
  }
  if (typeof resultCode === 'string' && ESB_CODES[resultCode]) {
    // ESB000010 says the gateway call succeeded, not the transaction: it only counts as `ok`
    // alongside a response code that does not contradict it (handled by the caller)
    return ESB_CODES[resultCode].is;
  }
  return undefined;
}

/** The meaning of a code for messages (never the raw message of a body, which may hold a phone number). */
export function meaningOf(code: string): string | undefined {
  return (COLLECTION_CODES[code] ?? DISBURSEMENT_CODES[code] ?? ROUTER_CODES[code] ?? ESB_CODES[code])?.meaning;
}
