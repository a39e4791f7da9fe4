import { Unprocessable } from '../errors';

/**
 * Refund rules (pure). Glossary:
 * - refund: money sent back to the client who paid (to the phone of a mobile-money payment, or by
 *   the operator to the card of a card payment: docs/decisions.md#operator-admin-api), taken from the
 *   merchant's available balance when it is created (`pending`), confirmed (`succeeded`) or
 *   refused (`failed`, the money goes back to available) by the provider (its state machine is
 *   shared/operations/kindMachines.ts).
 * - refunded amount: the sum of a payment's `pending` and `succeeded` refunds (docs/decisions.md#payments).
 */

/** The part of a payment that decides whether, and how much, it can be refunded. */
export interface RefundablePayment {
  status: string;
  method: string;
  amount_charged: number;
  amount_refunded: number;
}

/**
 * The amount of a new refund: the requested one, or by default the whole rest not yet refunded.
 * Throws the 422 of docs/decisions.md#provider-operations when the payment cannot be refunded by that amount. The balance
 * check (`insufficient-balance`) is the ledger's, in the same transaction.
 */
export function refundAmount(payment: RefundablePayment, requested?: number): number {
  // card refunds are handled by the operator whatever the payment's state (spec rule 5)
  if (payment.method === 'card')
    throw new Unprocessable(
      'card-refund-not-supported',
      'Card payments are refunded by the operator, not through the API',
    );
  return refundableAmount(payment, requested);
}

/**
 * The amount of a refund of a payment of any method (the operator's refund of a card payment
 * uses it directly: docs/decisions.md#operator-admin-api): only a succeeded payment, by at most
 * what is not refunded yet (422 payment-not-refundable, refund-exceeds-refundable).
 */
export function refundableAmount(payment: RefundablePayment, requested?: number): number {
  if (payment.status !== 'succeeded')
    throw new Unprocessable('payment-not-refundable', `A ${payment.status} payment cannot be refunded`);
  const rest = payment.amount_charged - payment.amount_refunded;
  const amount = requested ?? rest;
  if (amount > rest || amount < 1) {
    throw new Unprocessable(
      'refund-exceeds-refundable',
      `The amount exceeds what is left to refund (${rest})`,
      'amount',
    );
  }
  return amount;
}

/** The payment's trigger once a refund is made: `refund_in_full` exactly when refunds cover amount_charged. */
export function refundTrigger(amountCharged: number, amountRefunded: number): 'refund_partial' | 'refund_in_full' {
  return amountRefunded >= amountCharged ? 'refund_in_full' : 'refund_partial';
}
