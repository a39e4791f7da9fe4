import { paymentCredit } from '../domain/ledger';
import { post } from '../ledger/postings';
import type { OperationKind } from '../operations/kind';
import { paymentMachine, type PaymentStatus } from '../operations/machines';
import { QUEUES } from '../queues/names';
import { PAYMENTS, type PaymentRow } from './rows';
import { paymentEventObject } from './view';

/**
 * How long a payment may go on asking a provider that cannot be reached, past its window, before
 * it is cancelled.
 */
export const UNREACHABLE_GRACE_MS = 60 * 60 * 1000;

const REPORTED = { succeeded: 'succeed', failed: 'fail', cancelled: 'cancel' } as const;

/**
 * A collection as a kind of the operations kernel. Mobile money is sent (the push prompt) by the
 * provider-push pool; at the end of its window the provider's outcome is applied, and a payment
 * the provider has no outcome for is cancelled. A card payment still open at the end of its
 * checkout window is cancelled.
 */
export const paymentKind: OperationKind<PaymentRow, PaymentStatus> = {
  name: 'payment',
  table: PAYMENTS,
  history: { table: 'payment_status_changes', column: 'payment_id' },
  machine: paymentMachine,
  send: { queue: QUEUES.providerPush, job: 'push', idField: 'paymentId' },
  providerRefVisible: true,
  sendable: (p) => p.method === 'mobile_money',
  request: (provider, p) => provider.push({ paymentId: p.id, amount: p.amount_charged, currency: p.currency, msisdn: p.phone!, description: p.description }),
  reported: (status) => REPORTED[status],
  unsentAtWindowEnd: 'ask',
  atWindowEnd(p, answer, now) {
    if (p.method === 'card') return { trigger: 'cancel', details: { reason: 'checkout-window-expired' } };
    switch (answer.kind) {
      case 'no-provider':
        return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
      case 'unreachable':
        return now - p.window_ends_at.getTime() > UNREACHABLE_GRACE_MS ? { trigger: 'cancel', details: { reason: 'provider-unreachable' } } : 'ask-again';
      case 'status': {
        const { state, providerRef, failureCode, failureMessage } = answer;
        if (state === 'succeeded' || state === 'failed' || state === 'cancelled') {
          return { trigger: REPORTED[state], details: { reason: 'reconciliation', providerRef, failureCode, failureMessage } };
        }
        // the provider has no outcome (never answered, or never got the push): the window is over
        return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
      }
    }
  },
  eventObject: paymentEventObject,
  async post(trx, p) {
    await post(trx, paymentCredit({ paymentId: p.id, merchantId: p.merchant_id, environment: p.environment, currency: p.currency, amountCharged: p.amount_charged, amountNet: p.amount_net, fee: p.fee }));
  },
};
