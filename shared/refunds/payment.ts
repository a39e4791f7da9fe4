import type { Trx } from '../db/knex';
import { decide } from '../domain/payment';
import { paymentStatusForRefunded } from '../domain/refund';
import { notFound } from '../errors';
import { lockPayment, PAYMENTS, type PaymentRow } from '../payments/rows';
import type { Caller } from '../domain/caller';

/** What refunds do to the payment they refund, always under the payment's row lock. */

/** Locks a payment of this merchant and environment; anyone else's is 404, as if it did not exist. */
export async function lockPaymentOf(trx: Trx, viewer: Caller, paymentId: string): Promise<PaymentRow> {
  const payment = await lockPayment(trx, paymentId);
  if (!payment || payment.merchant_id !== viewer.merchantId || payment.environment !== viewer.environment) throw notFound('Payment');
  return payment;
}

/**
 * Changes a locked payment's refunded amount, moving it to `refunded` (or back to `succeeded`)
 * through the payment state machine when the amount reaches (or leaves) amount_charged. The
 * version grows with every change, so a later event carries a newer object_version.
 */
export async function setAmountRefunded(trx: Trx, payment: PaymentRow, amountRefunded: number, reason: string): Promise<void> {
  const target = paymentStatusForRefunded(payment.amount_charged, amountRefunded);
  let status = payment.status;
  if (target !== payment.status) {
    const d = decide(payment.status, target === 'refunded' ? 'refund_in_full' : 'refund_reopened');
    if (d.kind !== 'move') throw new Error(`payment ${payment.id}: cannot go from ${payment.status} to ${target} (${d.kind})`);
    status = d.to;
    await trx('payment_status_changes').insert({ payment_id: payment.id, from_status: payment.status, to_status: status, reason, at: trx.raw('clock_timestamp()') });
  }
  await trx(PAYMENTS)
    .where({ id: payment.id })
    .update({ amount_refunded: amountRefunded, status, version: payment.version + 1, updated_at: trx.fn.now() });
}
