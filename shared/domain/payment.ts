/**
 * Payment rules (pure). Glossary:
 * - payment: one collection from a client to a merchant, by mobile money or card.
 * - push: the prompt the provider sends to the client's phone (mobile money); the client
 *   confirms with a PIN, refuses, or never answers.
 * - callback: the provider's report of an outcome, received over HTTP and applied later.
 * - provider window: how long a payment may wait for its outcome before the reconciliation
 *   sweep asks the provider, and cancels it when the provider has none.
 * - trigger: what happened to a payment; `decide` says what it does to each status.
 */

export type PaymentStatus = 'pending' | 'processing' | 'succeeded' | 'failed' | 'cancelled' | 'refunded';
export const PAYMENT_STATUSES: PaymentStatus[] = ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded'];

export type PaymentTrigger =
  /** card: the client is sent to the 3-D Secure challenge */
  | 'start_3ds'
  /** the provider reports the client paid */
  | 'succeed'
  /** the provider reports a failure (refusal, wrong PIN, insufficient funds), or refused the push */
  | 'fail'
  /** the provider reports a cancellation, or the window ended without an outcome */
  | 'cancel'
  /** refunds now cover amount_charged */
  | 'refund_in_full'
  /** a refund failed, so refunds no longer cover amount_charged */
  | 'refund_reopened';
export const PAYMENT_TRIGGERS: PaymentTrigger[] = ['start_3ds', 'succeed', 'fail', 'cancel', 'refund_in_full', 'refund_reopened'];

export type PaymentEventType = 'payment.succeeded' | 'payment.failed' | 'payment.cancelled';

export type Decision =
  | {
      kind: 'move';
      to: PaymentStatus;
      /** the event the change sends, if any */
      event: PaymentEventType | null;
      /** amount_net goes to the merchant's available balance */
      credit: boolean;
      /** the payment reaches its outcome: `completed` is set */
      completes: boolean;
    }
  /** the trigger was already applied (a repeated callback): nothing changes */
  | { kind: 'duplicate' }
  /** the payment already reached another outcome (a late callback): recorded, nothing changes */
  | { kind: 'ignored-late' }
  /** a move no correct caller asks for (a bug, not a provider's report) */
  | { kind: 'illegal' };

const MOVES: Record<PaymentStatus, Partial<Record<PaymentTrigger, PaymentStatus>>> = {
  pending: { start_3ds: 'processing', succeed: 'succeeded', fail: 'failed', cancel: 'cancelled' },
  processing: { succeed: 'succeeded', fail: 'failed', cancel: 'cancelled' },
  succeeded: { refund_in_full: 'refunded' },
  refunded: { refund_reopened: 'succeeded' },
  failed: {},
  cancelled: {},
};

/** Statuses in which a trigger has already had its effect. */
const ALREADY: Record<PaymentTrigger, PaymentStatus[]> = {
  start_3ds: ['processing'],
  succeed: ['succeeded', 'refunded'],
  fail: ['failed'],
  cancel: ['cancelled'],
  refund_in_full: ['refunded'],
  refund_reopened: ['succeeded'],
};

/** Outcome triggers: reported by a provider (or the sweep), so they may come late. */
const OUTCOMES: PaymentTrigger[] = ['succeed', 'fail', 'cancel', 'start_3ds'];

const EVENTS: Partial<Record<PaymentStatus, PaymentEventType>> = {
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
  cancelled: 'payment.cancelled',
};

export const isFinalPaymentStatus = (s: PaymentStatus) => s !== 'pending' && s !== 'processing';

/** What `trigger` does to a payment in `status`. */
export function decide(status: PaymentStatus, trigger: PaymentTrigger): Decision {
  const to = MOVES[status][trigger];
  if (to) {
    const reachesOutcome = !isFinalPaymentStatus(status) && isFinalPaymentStatus(to);
    return {
      kind: 'move',
      to,
      event: reachesOutcome ? (EVENTS[to] ?? null) : null,
      credit: reachesOutcome && to === 'succeeded',
      completes: reachesOutcome,
    };
  }
  if (ALREADY[trigger].includes(status)) return { kind: 'duplicate' };
  if (OUTCOMES.includes(trigger) && isFinalPaymentStatus(status)) return { kind: 'ignored-late' };
  return { kind: 'illegal' };
}
