import type { FailureCode } from '../failureCodes';

/**
 * The gateway's `response.gatewayCode` → our outcome (README.md "gatewayCode → outcome"). The
 * list is the enumeration of `response.gatewayCode` on the version 100 operation pages
 * (https://mtf.gateway.mastercard.com/api/documentation/apiDocumentation/rest-json/version/100/operation/Transaction%3a%20%20Pay.html)
 * and the response-code page
 * (https://developer.mastercard.com/mastercard-gateway/documentation/testing/response-code/).
 *
 * - `approved`: money moved (with `result: SUCCESS` only).
 * - `failed`: final, with our failure code (with `result: FAILURE`).
 * - `settle`: the outcome is not known from this answer (the gateway or the acquirer did not
 *   finish, or money may have moved in part): never a failure on its own; settled by
 *   RETRIEVE_TRANSACTION / RETRIEVE_ORDER. `finalFailure` is what a retrieve that still shows
 *   `result: FAILURE` with this code means; without it the code stays unknown (a person decides).
 */
export type CodeClass =
  | { class: 'approved' }
  | { class: 'failed'; failureCode: FailureCode }
  | { class: 'settle'; finalFailure?: FailureCode };

const approved: CodeClass = { class: 'approved' };
const failed = (failureCode: FailureCode): CodeClass => ({ class: 'failed', failureCode });
const settle = (finalFailure?: FailureCode): CodeClass =>
  finalFailure ? { class: 'settle', finalFailure } : { class: 'settle' };

export const GATEWAY_CODES: Record<string, CodeClass> = {
  APPROVED: approved,
  APPROVED_AUTO: approved,
  APPROVED_PENDING_SETTLEMENT: approved,
  // approved for less than asked: money moved, but not the payment's amount
  PARTIALLY_APPROVED: settle(),

  DECLINED: failed('card-declined'),
  DECLINED_AVS: failed('card-declined'),
  DECLINED_AVS_CSC: failed('card-declined'),
  DECLINED_CSC: failed('card-declined'),
  DECLINED_DO_NOT_CONTACT: failed('card-declined'),
  DECLINED_INVALID_PIN: failed('card-declined'),
  DECLINED_PAYMENT_PLAN: failed('card-declined'),
  DECLINED_PIN_REQUIRED: failed('card-declined'),
  REFERRED: failed('card-declined'),
  INVALID_CSC: failed('card-declined'),
  BLOCKED: failed('card-declined'),
  NO_BALANCE: failed('card-declined'),

  INSUFFICIENT_FUNDS: failed('insufficient-funds'),
  EXPIRED_CARD: failed('expired-card'),

  AUTHENTICATION_FAILED: failed('authentication-failed'),
  NOT_ENROLLED_3D_SECURE: failed('authentication-failed'),

  ABORTED: failed('provider-failed'),
  CANCELLED: failed('provider-failed'),
  NOT_SUPPORTED: failed('provider-failed'),
  UNSPECIFIED_FAILURE: failed('provider-failed'),
  EXCEEDED_RETRY_LIMIT: failed('provider-failed'),
  DUPLICATE_BATCH: failed('provider-failed'),
  BALANCE_AVAILABLE: failed('provider-failed'),
  BALANCE_UNKNOWN: failed('provider-failed'),

  // not finished: the gateway or the acquirer has not told the outcome yet
  PENDING: settle(),
  SUBMITTED: settle(),
  AUTHENTICATION_IN_PROGRESS: settle(),
  DEFERRED_TRANSACTION_RECEIVED: settle(),
  // another operation holds the order (perhaps our own earlier attempt): read it again
  LOCK_FAILURE: settle('provider-failed'),
  // the acquirer or the gateway failed mid-way: it may have authorised; a retrieve decides
  TIMED_OUT: settle('provider-failed'),
  ACQUIRER_SYSTEM_ERROR: settle('provider-failed'),
  SYSTEM_ERROR: settle('provider-failed'),
  UNKNOWN: settle(),
};

export type Outcome =
  { state: 'succeeded' } | { state: 'failed'; failureCode: FailureCode } | { state: 'unknown'; why: string };

/**
 * A payment or refund transaction's outcome from its `result` and `response.gatewayCode`.
 * `retrieved`: the answer is a RETRIEVE_TRANSACTION / RETRIEVE_ORDER / confirmed notification
 * (the gateway's record), not the answer of the operation itself; then a `settle` code with
 * `result: FAILURE` is final when the table gives it a final failure.
 */
export function classify(result: string, gatewayCode: string, retrieved: boolean): Outcome {
  const entry = GATEWAY_CODES[gatewayCode];
  if (result === 'SUCCESS') {
    return entry?.class === 'approved'
      ? { state: 'succeeded' }
      : { state: 'unknown', why: `result SUCCESS with gatewayCode ${gatewayCode}` };
  }
  if (result === 'FAILURE') {
    if (entry?.class === 'failed') return { state: 'failed', failureCode: entry.failureCode };
    if (entry?.class === 'approved') return { state: 'unknown', why: `result FAILURE with gatewayCode ${gatewayCode}` };
    if (!retrieved) return { state: 'unknown', why: `gatewayCode ${gatewayCode}: settle by retrieve` };
    // the gateway's record says FAILURE: final where the table says so; a code we do not know
    // with FAILURE is a failure we cannot name
    if (!entry) return { state: 'failed', failureCode: 'provider-failed' };
    if (entry.class === 'settle' && entry.finalFailure) return { state: 'failed', failureCode: entry.finalFailure };
    return { state: 'unknown', why: `gatewayCode ${gatewayCode} still unsettled` };
  }
  return { state: 'unknown', why: `result ${result}` };
}
