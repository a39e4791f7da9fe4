import type { CardPaymentStatus, PaymentStatus, PayoutStatus, RefundStatus } from '../vocabulary';
import type { Machine } from './stateMachine';

/**
 * The state machine of each kind of operation, as data (pure; tested exhaustively in
 * test/unit/operations-machine.test.ts). Statuses are the ones the API shows.
 */

/**
 * What every collection (mobile money or card) reports and reaches: the provider's words, the
 * events and the credit of its outcomes, and the late success the money forces.
 */
const COLLECTION_OUTCOMES = {
  outcomes: ['sent', 'start_3ds', 'succeed', 'fail', 'cancel'],
  reached: {
    succeeded: { event: 'payment.succeeded', effect: 'credit' },
    failed: { event: 'payment.failed', effect: null },
    cancelled: { event: 'payment.cancelled', effect: null },
  },
  // a provider that reports success after it said failed or cancelled contradicts itself, and the
  // money is real: the one move out of a final status (docs/decisions.md#late-success), listed for review
  corrections: {
    cancelled: { succeed: { to: 'succeeded', reason: 'late-success' } },
    failed: { succeed: { to: 'succeeded', reason: 'late-success' } },
  },
} satisfies Pick<Machine<CardPaymentStatus>, 'outcomes' | 'reached' | 'corrections'>;

/**
 * A mobile-money collection: created `processing` (the push follows at once), so nothing moves out
 * of `pending` (a status of the API that only card payments take: cardPaymentMachine). A succeeded
 * payment becomes `refunded` when refunds cover amount_charged, and `succeeded` again if one of them fails.
 */
export const paymentMachine: Machine<PaymentStatus> = {
  statuses: ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded'],
  open: ['pending', 'processing'],
  moves: {
    pending: {},
    processing: { sent: 'processing', succeed: 'succeeded', fail: 'failed', cancel: 'cancelled' },
    succeeded: { refund_partial: 'succeeded', refund_in_full: 'refunded', refund_reopened: 'succeeded' },
    refunded: { refund_reopened: 'succeeded' },
    failed: {},
    cancelled: {},
  },
  already: {
    succeed: ['succeeded', 'refunded'],
    fail: ['failed'],
    cancel: ['cancelled'],
    refund_in_full: ['refunded'],
  },
  ...COLLECTION_OUTCOMES,
};

/** A refund: `pending` from its creation (the money already left available) until the provider's outcome. */
export const refundMachine: Machine<RefundStatus> = {
  statuses: ['pending', 'succeeded', 'failed'],
  open: ['pending'],
  moves: {
    pending: { sent: 'pending', succeed: 'succeeded', fail: 'failed' },
    succeeded: {},
    failed: {},
  },
  already: { succeed: ['succeeded'], fail: ['failed'] },
  outcomes: ['sent', 'succeed', 'fail'],
  reached: {
    succeeded: { event: 'refund.succeeded', effect: 'deliver' },
    failed: { event: 'refund.failed', effect: 'return' },
  },
};

/**
 * A payout: `pending` until the provider accepts it, then `processing`. An outcome may overtake
 * the acceptance (a fast callback), so it is taken from `pending` too.
 */
export const payoutMachine: Machine<PayoutStatus> = {
  statuses: ['pending', 'processing', 'succeeded', 'failed'],
  open: ['pending', 'processing'],
  moves: {
    pending: { sent: 'processing', succeed: 'succeeded', fail: 'failed' },
    processing: { succeed: 'succeeded', fail: 'failed' },
    succeeded: {},
    failed: {},
  },
  already: { sent: ['processing'], succeed: ['succeeded'], fail: ['failed'] },
  outcomes: ['sent', 'succeed', 'fail'],
  reached: {
    succeeded: { event: 'payout.succeeded', effect: 'deliver' },
    failed: { event: 'payout.failed', effect: 'return' },
  },
};

/**
 * A card payment (docs/decisions.md#cards-hosted-checkout): `pending` from its creation while the client is on the
 * checkout page; the acquirer's answer to the charge (`sent`) leaves it `pending` until its
 * callback when approved, makes it `processing` while the client is in 3-D Secure, or fails it
 * (declined); the callback (or asking the acquirer at its window's end) gives the outcome. It is
 * cancelled at the end of the 30-minute checkout window or of the 3-D Secure window. Card
 * payments are never refunded through the merchant API (docs/decisions.md#cards-hosted-checkout);
 * the operator's refunds move a succeeded one as a mobile-money payment's refunds do
 * (docs/decisions.md#operator-admin-api): `refunded` when they cover amount_charged.
 */
export const cardPaymentMachine: Machine<CardPaymentStatus> = {
  statuses: ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded'],
  open: ['pending', 'processing'],
  moves: {
    pending: { sent: 'pending', start_3ds: 'processing', succeed: 'succeeded', fail: 'failed', cancel: 'cancelled' },
    processing: { succeed: 'succeeded', fail: 'failed', cancel: 'cancelled' },
    succeeded: { refund_partial: 'succeeded', refund_in_full: 'refunded', refund_reopened: 'succeeded' },
    refunded: { refund_reopened: 'succeeded' },
    failed: {},
    cancelled: {},
  },
  // the challenge is the acceptance of the charge: in `processing` both have happened
  already: {
    sent: ['processing'],
    start_3ds: ['processing'],
    succeed: ['succeeded', 'refunded'],
    fail: ['failed'],
    cancel: ['cancelled'],
    refund_in_full: ['refunded'],
  },
  ...COLLECTION_OUTCOMES,
};
