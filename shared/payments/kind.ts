import { paymentCredit } from '../rules/ledger';
import { defineKind, type OperationKind } from '../operations/kind';
import { paymentMachine } from '../operations/kindMachines';
import { QUEUES } from '../queues/names';
import { Payment, PaymentStatusChange } from '../db/models';
import { paymentEventObject } from './view';
import { PAYMENT_COLUMNS, type PaymentRow } from '../db/rows';
import type { PaymentStatus } from '../vocabulary';

const REPORTED = { succeeded: 'succeed', failed: 'fail', cancelled: 'cancel' } as const;

/**
 * What every collection (mobile money, card) says as a kind: how a reported status maps to a
 * trigger, its outcome at the window's end (docs/decisions.md#faults-and-limits), its event object and its credit.
 */
export const collectionPolicy: Pick<
  OperationKind<PaymentRow, any, any>,
  'reported' | 'unsentAtWindowEnd' | 'atWindowEnd' | 'eventObject' | 'posting' | 'moved'
> = {
  moved: (p) => ({ amount: p.amount_charged, currency: p.currency }),
  reported: (status) => REPORTED[status],
  unsentAtWindowEnd: 'ask',
  atWindowEnd(_p, answer) {
    switch (answer.kind) {
      case 'no-provider':
        // no provider can take the client's money: nothing can still move
        return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
      case 'unreachable':
        // the provider may still take the money: never cancelled on a guess (docs/decisions.md#faults-and-limits)
        return 'ask-again';
      case 'status': {
        const { state, providerRef } = answer;
        if (state === 'succeeded') return { trigger: 'succeed', details: { reason: 'provider-asked', providerRef } };
        if (state === 'failed')
          return {
            trigger: 'fail',
            details: {
              reason: 'provider-asked',
              providerRef,
              failureCode: answer.failureCode,
              failureMessage: answer.failureMessage,
            },
          };
        if (state === 'cancelled') return { trigger: 'cancel', details: { reason: 'provider-asked', providerRef } };
        // still pending with the provider: the client may yet approve, so ask again
        if (state === 'pending') return 'ask-again';
        // expired, or never received by the provider: the window is over and no money moved
        return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
      }
    }
  },
  eventObject: paymentEventObject,
  posting: (p) =>
    paymentCredit({
      paymentId: p.id,
      merchantId: p.merchant_id,
      environment: p.environment,
      currency: p.currency,
      amountCharged: p.amount_charged,
      amountNet: p.amount_net,
      fee: p.fee,
      provider: p.provider,
    }),
};

/**
 * A mobile-money collection as a kind of the operations kernel, pushed by the provider-push pool.
 * Card payments share the table and are their own kind (shared/cards/kind.ts).
 */
export const mobileMoneyPaymentKind: OperationKind<PaymentRow, PaymentStatus> = defineKind<PaymentRow, PaymentStatus>(
  {
    name: 'payment',
    model: Payment,
    scope: { method: 'mobile_money' },
    history: PaymentStatusChange,
    machine: paymentMachine,
    send: { queue: QUEUES.providerPush, job: 'push', idField: 'paymentId' },
    providerRefVisible: true,
    // a push after the window would prompt a client for a payment about to be cancelled
    sendable: (p, now) => p.method === 'mobile_money' && p.window_ends_at.getTime() > now,
    request: (provider, p) =>
      provider.push({
        paymentId: p.id,
        operator: p.operator!,
        amount: p.amount_charged,
        currency: p.currency,
        msisdn: p.phone!,
        description: p.description,
      }),
    ...collectionPolicy,
  },
  PAYMENT_COLUMNS,
  // two batches of new payments that share a reference wait for each other instead of deadlocking
  ['merchant_id', 'environment', 'reference'],
);
