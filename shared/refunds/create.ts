import type { Trx } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { isId, newId, nowUnix } from '../domain/ids';
import { outgoingDebit, type Currency, type Environment } from '../domain/ledger';
import { decide, type PaymentStatus } from '../domain/payment';
import { paymentStatusForRefunded, refundAmount } from '../domain/refund';
import { notFound } from '../errors';
import { post } from '../ledger/postings';
import { QUEUES } from '../queues/names';
import { refundView, type RefundObject, type RefundRow } from './view';

/** The payment columns a refund reads and changes. */
export interface PaymentForRefund {
  id: string;
  status: PaymentStatus;
  method: string;
  currency: Currency;
  amount_charged: number;
  amount_refunded: number;
  operator: string | null;
  phone: string | null;
  version: number;
}

export interface Owner {
  merchantId: string;
  environment: Environment;
}

/** Locks a payment of this merchant and environment; anyone else's is 404, as if it did not exist. */
export async function lockPaymentOf(trx: Trx, owner: Owner, paymentId: string): Promise<PaymentForRefund> {
  const payment: PaymentForRefund | undefined = await trx('payments')
    .where({ id: paymentId, merchant_id: owner.merchantId, environment: owner.environment })
    .forUpdate()
    .first('id', 'status', 'method', 'currency', 'amount_charged', 'amount_refunded', 'operator', 'phone', 'version');
  if (!payment) throw notFound('Payment');
  return payment;
}

/**
 * Changes a payment's refunded amount under its row lock, moving it to `refunded` (or back to
 * `succeeded`) through the payment state machine when the amount crosses amount_charged.
 * The version grows with every change, so events built later carry a newer object_version.
 */
export async function setAmountRefunded(trx: Trx, payment: PaymentForRefund, amountRefunded: number, reason: string): Promise<void> {
  const target = paymentStatusForRefunded(payment.amount_charged, amountRefunded);
  let status = payment.status;
  if (target !== payment.status) {
    const d = decide(payment.status, target === 'refunded' ? 'refund_in_full' : 'refund_reopened');
    if (d.kind !== 'move') throw new Error(`payment ${payment.id}: cannot go from ${payment.status} to ${target} (${d.kind})`);
    status = d.to;
    await trx('payment_status_changes').insert({ payment_id: payment.id, from_status: payment.status, to_status: status, reason });
  }
  await trx('payments')
    .where({ id: payment.id })
    .update({ amount_refunded: amountRefunded, status, version: payment.version + 1, updated_at: trx.fn.now() });
}

export interface RefundInput {
  amount?: number;
  reason?: string;
}

/**
 * POST /v1/payments/{id}/refund: in one transaction under the payment's row lock, checks the
 * refund (decisions.md 422s), takes it from available (422 insufficient-balance), writes it
 * `pending` with its history, updates the payment, and queues the call to the provider.
 */
export async function createRefund(deps: TransactDeps, owner: Owner, paymentId: string, input: RefundInput, requestId?: string): Promise<RefundObject> {
  if (!isId('payment', paymentId)) throw notFound('Payment');
  return transact(deps, async (trx, outbox) => {
    const payment = await lockPaymentOf(trx, owner, paymentId);
    const amount = refundAmount(payment, input.amount);
    const refund: RefundRow = {
      id: newId('refund'),
      payment_id: payment.id,
      merchant_id: owner.merchantId,
      environment: owner.environment,
      status: 'pending',
      amount,
      currency: payment.currency,
      reason: input.reason ?? null,
      operator: payment.operator!,
      phone: payment.phone!,
      provider: null,
      provider_ref: null,
      failure_code: null,
      failure_message: null,
      version: 1,
      created: nowUnix(),
      completed: null,
    };
    await post(trx, outgoingDebit('refund', { referenceId: refund.id, merchantId: owner.merchantId, environment: owner.environment, currency: refund.currency, amount }));
    await trx('refunds').insert(refund);
    await trx('refund_status_changes').insert({ refund_id: refund.id, from_status: null, to_status: 'pending', reason: 'created' });
    await setAmountRefunded(trx, payment, payment.amount_refunded + amount, `refund ${refund.id} created`);
    await outbox.add(QUEUES.refund, 'send-refund', { refundId: refund.id, requestId });
    return refundView(refund);
  });
}
