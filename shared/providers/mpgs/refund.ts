import { FAILURE_CODES } from '../failureCodes';
import { ProviderError, retryable } from '../errors';
import type { CardRefundAnswer, CardRefundRequest } from '../cardConnector';
import type { EchoedAmount, ProviderStatus } from '../types';
import { classify } from './codes';
import type { MpgsClient } from './client';
import { orderIdOf, refundTransactionId, type TransactionView } from './wire';

/**
 * The operator's card refund through the Mastercard Gateway (README.md in this folder, "Flow and
 * operations" 5 and 6; docs/decisions.md#operator-admin-api): REFUND on the payment's order (our
 * payment id) with our refund id as the transaction id, so a retry after a crash, a timeout or a
 * 5xx sends the same ids and the gateway refunds once. MpgsConnector.refund and its `ask` of a
 * refund call these.
 */

/** The refund's provider reference: where the gateway keeps it (order, then transaction). */
export const mpgsRefundRef = (paymentId: string, refundId: string) =>
  `${orderIdOf(paymentId)}/${refundTransactionId(refundId)}`;

/**
 * REFUND `req.amount` of the payment's order. The gateway answers with the outcome (codes.ts):
 * SUCCESS → `succeeded`; FAILURE with a final code → `failed` with its failure code; anything
 * unknown (PENDING, a code to settle, a timeout or 5xx the client could not settle by a
 * retrieve) → a retryable ProviderError: the refund pool asks again with the same ids, and the
 * sweep lists it for attention past its window. A refusal of the request itself (more than the
 * order's captured amount left, an unknown order: 400 INVALID_REQUEST the client's retrieve did
 * not settle) is final: `failed`, `provider-refused`.
 */
export async function mpgsRefund(client: MpgsClient, req: CardRefundRequest): Promise<CardRefundAnswer> {
  const providerRef = mpgsRefundRef(req.paymentId, req.refundId);
  let t: Awaited<ReturnType<MpgsClient['refund']>>;
  try {
    t = await client.refund(orderIdOf(req.paymentId), refundTransactionId(req.refundId), req.amount, req.currency);
  } catch (err) {
    if (err instanceof ProviderError && !err.retryable && err.code === 'provider-refused')
      return { providerRef, outcome: 'failed', failureCode: 'provider-refused', failureMessage: err.message };
    throw err;
  }
  const outcome = refundOutcome(t, t.settledBy === 'retrieve');
  if (outcome.state === 'unknown')
    throw retryable('provider-unknown-outcome', `mpgs REFUND ${providerRef} outcome unknown (${outcome.why})`);
  if (outcome.state === 'failed')
    return {
      providerRef,
      outcome: 'failed',
      failureCode: outcome.failureCode,
      failureMessage: FAILURE_CODES[outcome.failureCode],
    };
  return { providerRef, outcome: 'succeeded', failureCode: null, failureMessage: null };
}

/**
 * The kernel's status query of a refund (OperationRef kind `refund`, with its paymentId):
 * RETRIEVE_TRANSACTION of order = payment id, transaction = refund id. Not found → `not_found`
 * (the refund pool sends it again with the same ids); SUCCESS → `succeeded` with the amount and
 * currency the gateway echoes (checked against the refund's before it is applied); a final
 * FAILURE → `failed`; anything unsettled → `pending` (asked again; attention past the window). A
 * retrieve that gets no usable answer throws a retryable ProviderError (asked again too).
 */
export async function mpgsAskRefund(
  client: MpgsClient,
  ref: { paymentId: string; refundId: string },
): Promise<ProviderStatus & EchoedAmount> {
  const t = await client.retrieveTransaction(orderIdOf(ref.paymentId), refundTransactionId(ref.refundId));
  if (!t) return { state: 'not_found' };
  const providerRef = mpgsRefundRef(ref.paymentId, ref.refundId);
  const outcome = refundOutcome(t, true);
  if (outcome.state === 'succeeded') return { state: 'succeeded', providerRef, amount: t.amount, currency: t.currency };
  if (outcome.state === 'failed')
    return {
      state: 'failed',
      providerRef,
      failureCode: outcome.failureCode,
      failureMessage: FAILURE_CODES[outcome.failureCode],
      amount: t.amount,
      currency: t.currency,
    };
  return { state: 'pending', providerRef };
}

/** A REFUND transaction's outcome; a transaction of another type under our refund's id is never taken for it. */
function refundOutcome(t: TransactionView, retrieved: boolean): ReturnType<typeof classify> {
  if (t.type !== 'REFUND') return { state: 'unknown', why: `transaction is a ${t.type ?? 'transaction of no type'}` };
  return classify(t.result, t.gatewayCode, retrieved);
}
