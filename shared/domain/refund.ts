import { unprocessable } from '../errors';

/**
 * Refund rules (pure). Glossary:
 * - refund: money sent back to the client who paid a mobile-money payment, taken from the
 *   merchant's available balance when it is created (`pending`), confirmed (`succeeded`) or
 *   refused (`failed`, the money goes back to available) by the provider's callback.
 * - refunded amount: the sum of a payment's `pending` and `succeeded` refunds (decisions.md).
 */

export type RefundStatus = 'pending' | 'succeeded' | 'failed';
export const REFUND_STATUSES: RefundStatus[] = ['pending', 'succeeded', 'failed'];

/** What can happen to a refund after its creation: the provider confirms or refuses it. */
export type RefundTrigger = 'provider_succeeded' | 'provider_failed';
export const REFUND_TRIGGERS: RefundTrigger[] = ['provider_succeeded', 'provider_failed'];

const TRANSITIONS: Record<RefundStatus, Partial<Record<RefundTrigger, RefundStatus>>> = {
  pending: { provider_succeeded: 'succeeded', provider_failed: 'failed' },
  succeeded: {},
  failed: {},
};

/**
 * The status a trigger leads to, or null when the move is not allowed (a late or repeated
 * callback on a refund already final is recorded and ignored by the caller).
 */
export function nextRefundStatus(from: RefundStatus, trigger: RefundTrigger): RefundStatus | null {
  return TRANSITIONS[from][trigger] ?? null;
}

/** The part of a payment that decides whether, and how much, it can be refunded. */
export interface RefundablePayment {
  status: string;
  method: string;
  amount_charged: number;
  amount_refunded: number;
}

/**
 * The amount of a new refund: the requested one, or by default the whole rest not yet refunded.
 * Throws the 422 of decisions.md when the payment cannot be refunded by that amount. The balance
 * check (`insufficient-balance`) is the ledger's, in the same transaction.
 */
export function refundAmount(payment: RefundablePayment, requested?: number): number {
  // card refunds are handled by the operator whatever the payment's state (spec rule 5)
  if (payment.method === 'card') throw unprocessable('card-refund-not-supported', 'Card payments are refunded by the operator, not through the API');
  if (payment.status !== 'succeeded') throw unprocessable('payment-not-refundable', `A ${payment.status} payment cannot be refunded`);
  const rest = payment.amount_charged - payment.amount_refunded;
  const amount = requested ?? rest;
  if (amount > rest || amount < 1) {
    throw unprocessable('refund-exceeds-refundable', `The amount exceeds what is left to refund (${rest})`, 'amount');
  }
  return amount;
}

/** The payment's status once its refunded amount has changed (`refunded` exactly when fully refunded). */
export function paymentStatusForRefunded(amountCharged: number, amountRefunded: number): 'succeeded' | 'refunded' {
  return amountRefunded >= amountCharged ? 'refunded' : 'succeeded';
}
