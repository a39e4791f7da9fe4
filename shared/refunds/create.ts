import { transact, type TransactDeps } from '../db/transact';
import { isId, newId, nowUnix } from '../domain/ids';
import { outgoingDebit } from '../domain/ledger';
import { refundAmount } from '../domain/refund';
import { notFound } from '../errors';
import { post } from '../ledger/postings';
import type { Caller } from '../domain/caller';
import { QUEUES } from '../queues/names';
import { lockPaymentOf, setAmountRefunded } from './payment';
import { REFUNDS } from './rows';
import { refundView, type RefundObject, type RefundRow } from './view';

export interface RefundInput {
  amount?: number;
  reason?: string;
}

/**
 * POST /v1/payments/{id}/refund: in one transaction under the payment's row lock, checks the
 * refund (decisions.md 422s), takes it from available (422 insufficient-balance), writes it
 * `pending` with its history, updates the payment, and queues the call to the provider.
 */
export async function createRefund(deps: TransactDeps, viewer: Caller, paymentId: string, input: RefundInput, requestId?: string): Promise<RefundObject> {
  if (!isId('payment', paymentId)) throw notFound('Payment');
  return transact(deps, async (trx, outbox) => {
    const payment = await lockPaymentOf(trx, viewer, paymentId);
    const amount = refundAmount(payment, input.amount);
    const refund: RefundRow = {
      id: newId('refund'),
      payment_id: payment.id,
      merchant_id: viewer.merchantId,
      environment: viewer.environment,
      status: 'pending',
      amount,
      currency: payment.currency,
      reason: input.reason ?? null,
      operator: payment.operator!,
      phone: payment.phone!,
      provider: payment.provider,
      provider_ref: null,
      failure_code: null,
      failure_message: null,
      version: 1,
      created: nowUnix(),
      completed: null,
    };
    await trx(REFUNDS).insert(refund);
    await trx('refund_status_changes').insert({ refund_id: refund.id, from_status: null, to_status: 'pending', reason: 'created' });
    await setAmountRefunded(trx, payment, payment.amount_refunded + amount, `refund ${refund.id} created`);
    await outbox.add(QUEUES.refund, 'send-refund', { refundId: refund.id, requestId });
    // last, so the merchant's accounts stay locked only until the commit; 422 insufficient-balance undoes the rest
    await post(trx, outgoingDebit('refund', { referenceId: refund.id, merchantId: viewer.merchantId, environment: viewer.environment, currency: refund.currency, amount }));
    return refundView(refund);
  });
}
