import type { TransactDeps } from '../db/transact';
import type { Caches } from '../ttlCache';
import { idempotentTransact, type IdempotentWrite } from '../idempotency';
import type { Caller } from '../caller';
import { closures, refuseClosed } from '../availability/closures';
import { isId, newId } from '../ids';
import { outgoingDebit } from '../rules/ledger';
import { refundAmount, refundTrigger } from '../rules/refund';
import { NotFound, Unprocessable } from '../errors';
import type { ProviderRegistry } from '../providers/registry';
import { refuseUncarriable } from '../providers/routing';
import type { Operator } from '../vocabulary';
import { post } from '../ledger/postings';
import { newOperationFields } from '../operations/kind';
import { applyTrigger, createRow, lockRow } from '../operations/transition';
import { outboxMessage } from '../queues/outbox';
import { refundKind } from './kind';
import { mobileMoneyPaymentKind } from '../payments/kind';
import { cardPaymentKind } from '../cards/kind';
import { QUEUES } from '../queues/names';
import { refundView, type RefundObject } from './view';
import type { PaymentRow, RefundRow } from '../db/rows';

export type RefundInput = { amount?: number; reason?: string };

/**
 * POST /v1/payments/{id}/refund: one transaction (with its Idempotency-Key, if any) under the
 * payment's row lock; the payment's refunded amount moves through its own transition.
 */
export async function createRefund(
  deps: TransactDeps & { providerWindowMs: number; caches: Caches; providers: Pick<ProviderRegistry, 'connector'> },
  viewer: Caller,
  paymentId: string,
  input: RefundInput,
  requestId?: string,
  key?: IdempotentWrite<RefundObject>,
): Promise<RefundObject> {
  if (!isId('payment', paymentId)) throw new NotFound('Payment');
  // read before the transaction: no second connection is needed while the payment is locked
  const closed = await closures(deps);
  return idempotentTransact(deps, key, async (trx, outbox) => {
    const now = deps.clock.now();
    // a card payment is its own kind: found only to be refused (422 card-refund-not-supported)
    const payment =
      (await lockRow(trx, mobileMoneyPaymentKind, paymentId)) ?? (await lockRow(trx, cardPaymentKind, paymentId));
    if (!payment || payment.merchant_id !== viewer.merchantId || payment.environment !== viewer.environment)
      throw new NotFound('Payment');
    const amount = refundAmount(payment, input.amount);
    if (payment.operator) refuseClosed(closed, payment.operator, 'refund');
    refuseUnrefundable(deps.providers, payment, amount);
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
      created: Math.floor(now / 1000),
      ...newOperationFields(deps.providerWindowMs, now),
    };
    await createRow(trx, outbox, refundKind, refund, [
      outboxMessage(QUEUES.refund, 'send-refund', { refundId: refund.id, requestId }),
    ]);
    const refunded = payment.amount_refunded + amount;
    await applyTrigger(
      trx,
      outbox,
      mobileMoneyPaymentKind,
      payment,
      refundTrigger(payment.amount_charged, refunded),
      { reason: `refund ${refund.id} created`, at: now },
      { amount_refunded: refunded },
    );
    // last, so the merchant's accounts stay locked only until the commit; 422 insufficient-balance undoes the rest
    await post(
      trx,
      outgoingDebit('refund', {
        referenceId: refund.id,
        merchantId: viewer.merchantId,
        environment: viewer.environment,
        currency: refund.currency,
        amount,
      }),
    );
    return refundView(refund);
  });
}

/**
 * A refund goes to the connector that took the payment, whatever the routing table says now: it
 * must serve refunds (422 operator-unavailable), carry the amount (422 amount-not-supported), and
 * take a partial one (422 partial-refund-not-supported: Airtel refunds a transaction only whole).
 */
function refuseUnrefundable(providers: Pick<ProviderRegistry, 'connector'>, payment: PaymentRow, amount: number): void {
  const connector = providers.connector(payment.provider);
  const operator = payment.operator as Operator;
  if (!connector || !connector.capabilities.directions.includes('refund')) {
    throw new Unprocessable(
      'operator-unavailable',
      `The provider of this payment (${payment.provider ?? 'none'}) takes no refunds`,
      'operator',
    );
  }
  if (!connector.capabilities.partialRefunds && amount !== payment.amount_charged) {
    throw new Unprocessable(
      'partial-refund-not-supported',
      `${connector.id} refunds a payment only in full (${payment.amount_charged} ${payment.currency})`,
      'amount',
    );
  }
  refuseUncarriable(connector, operator, 'refund', payment.currency, amount);
}
