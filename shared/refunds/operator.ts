import type { Db } from '../db/knex';
import type { TransactDeps } from '../db/transact';
import { idempotentTransact, type IdempotentWrite } from '../idempotency';
import { isId, newId } from '../ids';
import { outgoingDebit } from '../rules/ledger';
import { refundableAmount, refundTrigger } from '../rules/refund';
import { NotFound, Unprocessable } from '../errors';
import type { ProviderRegistry } from '../providers/registry';
import type { CardConnector } from '../providers/cardConnector';
import { decimalsNeeded, minorToDecimal } from '../providers/amounts';
import { post } from '../ledger/postings';
import { newOperationFields } from '../operations/kind';
import { applyTrigger, createRow, lockRow } from '../operations/transition';
import { outboxMessage } from '../queues/outbox';
import { refundKind } from './kind';
import { cardPaymentKind } from '../cards/kind';
import { Payment } from '../db/models';
import { QUEUES } from '../queues/names';
import { refundView, type RefundObject } from './view';
import type { PaymentRow, RefundRow } from '../db/rows';
import type { Environment } from '../vocabulary';

/** What the operator asks: an amount in minor units (default: all that is not refunded yet) and a reason. */
export type OperatorRefundInput = { amount?: number; reason?: string };

/** Whose payment it is: the namespace of the operator's Idempotency-Key (the payment's merchant and environment). */
export interface PaymentOwner {
  merchantId: string;
  environment: Environment;
}

/** The merchant and environment of a payment, read without a lock (they never change); 404 when there is no such payment. */
export async function paymentOwner(db: Db, paymentId: string): Promise<PaymentOwner> {
  if (!isId('payment', paymentId)) throw new NotFound('Payment');
  const row = (await Payment.query(db).findById(paymentId).select('merchant_id', 'environment')) as
    Pick<PaymentRow, 'merchant_id' | 'environment'> | undefined;
  if (!row) throw new NotFound('Payment');
  return { merchantId: row.merchant_id, environment: row.environment };
}

/**
 * POST /admin/payments/{id}/refunds (docs/decisions.md#operator-admin-api): the operator refunds a
 * card payment, in full or in part, back to the card through the payment's card connector. One
 * transaction with its Idempotency-Key under the payment's row lock, as the merchant's refund of
 * a mobile-money payment (shared/refunds/create.ts): the refund row and its send job (the refund
 * pool), the payment's refunded amount through its own transition (`refunded` when covered), the
 * debit of the merchant's available balance. Checks in this order: 404; a mobile-money payment
 * (refunded by its merchant through the API) or a payment not succeeded, 422
 * `payment-not-refundable`; `refund-exceeds-refundable`; the card connector: configured (422
 * `method-unavailable`), a partial refund where it takes one (422 `partial-refund-not-supported`),
 * an amount it carries (422 `amount-not-supported`); then `insufficient-balance`.
 */
export async function createOperatorRefund(
  deps: TransactDeps & {
    providerWindowMs: (environment: Environment) => number;
    providers: Pick<ProviderRegistry, 'card'>;
  },
  paymentId: string,
  input: OperatorRefundInput,
  requestId?: string,
  key?: IdempotentWrite<RefundObject>,
): Promise<RefundObject> {
  if (!isId('payment', paymentId)) throw new NotFound('Payment');
  return idempotentTransact(deps, key, async (trx, outbox) => {
    const now = deps.clock.now();
    const payment = await lockRow(trx, cardPaymentKind, paymentId);
    if (!payment) {
      // a mobile-money payment is refunded by its merchant, to the phone that paid
      if (await Payment.query(trx).findById(paymentId).select('id'))
        throw new Unprocessable(
          'payment-not-refundable',
          'A mobile-money payment is refunded by its merchant through POST /v1/payments/{id}/refund, not by the operator',
        );
      throw new NotFound('Payment');
    }
    const amount = refundableAmount(payment, input.amount);
    refuseUnrefundableCard(deps.providers, payment, amount);
    const environment = payment.environment;
    const refund: RefundRow = {
      id: newId('refund'),
      payment_id: payment.id,
      merchant_id: payment.merchant_id,
      environment,
      status: 'pending',
      amount,
      currency: payment.currency,
      reason: input.reason ?? null,
      // back to the card: no phone
      operator: null,
      phone: null,
      provider: payment.provider,
      created: Math.floor(now / 1000),
      ...newOperationFields(deps.providerWindowMs(environment), now),
    };
    await createRow(trx, outbox, refundKind, refund, [
      outboxMessage(QUEUES.refund, 'send-refund', { refundId: refund.id, requestId }),
    ]);
    const refunded = payment.amount_refunded + amount;
    await applyTrigger(
      trx,
      outbox,
      cardPaymentKind,
      payment,
      refundTrigger(payment.amount_charged, refunded),
      { reason: `refund ${refund.id} created by the operator`, at: now },
      { amount_refunded: refunded },
    );
    // last, so the merchant's accounts stay locked only until the commit; 422 insufficient-balance undoes the rest
    await post(
      trx,
      outgoingDebit('refund', {
        referenceId: refund.id,
        merchantId: payment.merchant_id,
        environment,
        currency: refund.currency,
        amount,
      }),
    );
    return refundView(refund);
  });
}

/**
 * A card refund goes to the card connector that took the payment, whatever LIVE_CARD says now: it
 * must be configured (422 method-unavailable), take a partial refund when one is asked (422
 * partial-refund-not-supported) and carry the amount (422 amount-not-supported).
 */
export function refuseUnrefundableCard(
  providers: Pick<ProviderRegistry, 'card'>,
  payment: PaymentRow,
  amount: number,
): CardConnector {
  const connector = providers.card(payment.provider);
  if (!connector)
    throw new Unprocessable(
      'method-unavailable',
      `The card connector of this payment (${payment.provider ?? 'none'}) is not configured`,
    );
  if (!connector.capabilities.partialRefunds && amount !== payment.amount_charged) {
    throw new Unprocessable(
      'partial-refund-not-supported',
      `${connector.id} refunds a payment only in full (${payment.amount_charged} ${payment.currency})`,
      'amount',
    );
  }
  const currency = payment.currency;
  const rule = connector.capabilities.amountRule(currency);
  if (!rule) throw new Unprocessable('amount-not-supported', `${connector.id} takes no ${currency}`, 'amount');
  if (decimalsNeeded(amount, currency) > rule.decimals)
    throw new Unprocessable(
      'amount-not-supported',
      `${connector.id} cannot carry ${minorToDecimal(amount, currency)} ${currency}: at most ${rule.decimals} decimals`,
      'amount',
    );
  return connector;
}
