import type { Operator } from '../vocabulary';
import { defineKind, type OperationKind } from '../operations/kind';
import { refundMachine } from '../operations/machines';
import { moneyOutPolicy } from '../operations/moneyOut';
import { applyTrigger, lockRow } from '../operations/transition';
import { findOperation } from '../db/sql/operationReads';
import { paymentKind } from '../payments/kind';
import { QUEUES } from '../queues/names';
import { Refund, RefundStatusChange } from '../db/models';
import { refundView } from './view';
import { REFUND_COLUMNS, type PaymentRow, type RefundRow } from '../db/rows';
import type { RefundStatus } from '../vocabulary';

/**
 * A refund as a kind of the operations kernel: sent to the payment's provider by the refund pool,
 * to the phone that paid. When it fails, its payment's refunded amount goes down through the
 * payment's own transition (back to `succeeded` if it was `refunded`). Locks are taken refund,
 * then payment, then ledger accounts (creation takes payment, then accounts), so the flows never
 * wait on each other in a circle.
 */
export const refundKind: OperationKind<RefundRow, RefundStatus> = defineKind<RefundRow, RefundStatus>(
  {
    name: 'refund',
    model: Refund,
    history: RefundStatusChange,
    machine: refundMachine,
    send: { queue: QUEUES.refund, job: 'send-refund', idField: 'refundId' },
    providerRefVisible: false,
    sendable: () => true,
    async request(provider, r, db) {
      const payment = (await findOperation<PaymentRow>(db, paymentKind.sql, r.payment_id))!;
      return provider.refund({
        refundId: r.id,
        paymentId: payment.id,
        paymentProviderRef: payment.provider_ref,
        paymentAmount: payment.amount_charged,
        operator: r.operator as Operator,
        amount: r.amount,
        currency: r.currency,
        msisdn: r.phone,
        description: r.reason ?? null,
      });
    },
    moved: (r) => ({ amount: r.amount, currency: r.currency }),
    ...moneyOutPolicy<RefundRow>('refund'),
    eventObject: refundView,
    async afterMove(trx, outbox, r, to, at) {
      if (to !== 'failed') return;
      const payment = (await lockRow(trx, paymentKind, r.payment_id))!;
      await applyTrigger(
        trx,
        outbox,
        paymentKind,
        payment,
        'refund_reopened',
        { reason: `refund ${r.id} failed`, at },
        { amount_refunded: payment.amount_refunded - r.amount },
      );
    },
  },
  REFUND_COLUMNS,
);
