import type { Operator } from '../vocabulary';
import type { Trx } from '../db/knex';
import { defineKind, type OperationKind } from '../operations/kind';
import { refundMachine } from '../operations/kindMachines';
import { moneyOutPolicy } from '../operations/moneyOut';
import { applyTrigger, lockRow } from '../operations/transition';
import { findOperation } from '../db/sql/operationReads';
import { mobileMoneyPaymentKind } from '../payments/kind';
import { cardPaymentKind } from '../cards/kind';
import { QUEUES } from '../queues/names';
import { Refund, RefundStatusChange } from '../db/models';
import { refundView } from './view';
import { REFUND_COLUMNS, type PaymentRow, type RefundRow } from '../db/rows';
import type { PaymentStatus, RefundStatus } from '../vocabulary';
import type { Connector } from '../providers/connector';
import { isCardConnector, type CardConnector, type CardRefundAnswer } from '../providers/cardConnector';

/** The kind of a refund's payment: a card payment's refund has no phone (it goes back to the card). */
export function refundedPaymentKind(r: Pick<RefundRow, 'operator'>): OperationKind<PaymentRow, PaymentStatus, any> {
  return r.operator === null ? cardPaymentKind : mobileMoneyPaymentKind;
}

/** The refund's payment under its row lock (refund, then payment: the order every flow takes). */
export async function lockRefundedPayment(trx: Trx, r: RefundRow): Promise<PaymentRow> {
  return (await lockRow(trx, refundedPaymentKind(r), r.payment_id))!;
}

/**
 * A refund as a kind of the operations kernel, sent by the refund pool to the provider that took
 * its payment: a mobile-money connector, to the phone that paid (POST /v1/payments/{id}/refund), or
 * a card connector, to the card (the operator's POST /admin/payments/{id}/refunds,
 * docs/decisions.md#operator-admin-api). When it fails, its payment's refunded amount goes down
 * through the payment's own transition (back to `succeeded` if it was `refunded`). Locks are taken
 * refund, then payment, then ledger accounts (creation takes payment, then accounts), so the flows
 * never wait on each other in a circle.
 */
export const refundKind: OperationKind<RefundRow, RefundStatus, Connector | CardConnector> = defineKind<
  RefundRow,
  RefundStatus,
  Connector | CardConnector
>(
  {
    name: 'refund',
    model: Refund,
    history: RefundStatusChange,
    machine: refundMachine,
    send: { queue: QUEUES.refund, job: 'send-refund', idField: 'refundId' },
    providerRefVisible: false,
    sendable: () => true,
    async request(provider, r, db) {
      const payment = (await findOperation<PaymentRow>(db, refundedPaymentKind(r).sql, r.payment_id))!;
      if (isCardConnector(provider)) {
        return provider.refund({
          refundId: r.id,
          paymentId: payment.id,
          paymentProviderRef: payment.provider_ref,
          amount: r.amount,
          currency: r.currency,
          partial: r.amount < payment.amount_charged,
          reason: r.reason ?? null,
        });
      }
      return provider.refund({
        refundId: r.id,
        paymentId: payment.id,
        paymentProviderRef: payment.provider_ref,
        paymentAmount: payment.amount_charged,
        operator: r.operator as Operator,
        amount: r.amount,
        currency: r.currency,
        msisdn: r.phone!,
        description: r.reason ?? null,
      });
    },
    // a card connector may answer with the outcome itself (a gateway refunds at once); mobile money answers `sent`
    accepted(_r, answer) {
      const a = answer as Partial<CardRefundAnswer>;
      if (a.outcome === 'succeeded') return { trigger: 'succeed' };
      if (a.outcome === 'failed')
        return {
          trigger: 'fail',
          details: {
            reason: 'provider-refused',
            failureCode: a.failureCode ?? 'provider-failed',
            failureMessage: a.failureMessage ?? 'The provider reported a failure',
          },
        };
      return { trigger: 'sent' };
    },
    moved: (r) => ({ amount: r.amount, currency: r.currency }),
    ...moneyOutPolicy<RefundRow>('refund'),
    eventObject: refundView,
    async afterMove(trx, outbox, r, to, at) {
      if (to !== 'failed') return;
      const payment = await lockRefundedPayment(trx, r);
      await applyTrigger(
        trx,
        outbox,
        refundedPaymentKind(r),
        payment,
        'refund_reopened',
        { reason: `refund ${r.id} failed`, at },
        { amount_refunded: payment.amount_refunded - r.amount },
      );
    },
  },
  REFUND_COLUMNS,
);
