import { expect } from 'chai';
import { decide, PAYMENT_STATUSES, PAYMENT_TRIGGERS, type Decision, type PaymentStatus, type PaymentTrigger } from '../../shared/domain/payment';

const move = (to: PaymentStatus, event: Extract<Decision, { kind: 'move' }>['event'] = null, credit = false, completes = false): Decision => ({
  kind: 'move',
  to,
  event,
  credit,
  completes,
});
const DUP: Decision = { kind: 'duplicate' };
const LATE: Decision = { kind: 'ignored-late' };
const ILLEGAL: Decision = { kind: 'illegal' };

/** Every (status, trigger) pair of the payment state machine, allowed or not. */
const TABLE: Record<PaymentStatus, Record<PaymentTrigger, Decision>> = {
  pending: {
    start_3ds: move('processing'),
    succeed: move('succeeded', 'payment.succeeded', true, true),
    fail: move('failed', 'payment.failed', false, true),
    cancel: move('cancelled', 'payment.cancelled', false, true),
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  processing: {
    start_3ds: DUP,
    succeed: move('succeeded', 'payment.succeeded', true, true),
    fail: move('failed', 'payment.failed', false, true),
    cancel: move('cancelled', 'payment.cancelled', false, true),
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  succeeded: {
    start_3ds: LATE,
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    // a full refund sends no payment event and moves no money here (the refund does)
    refund_in_full: move('refunded'),
    refund_reopened: DUP,
  },
  failed: {
    start_3ds: LATE,
    succeed: LATE,
    fail: DUP,
    cancel: LATE,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  cancelled: {
    start_3ds: LATE,
    succeed: LATE,
    fail: LATE,
    cancel: DUP,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  refunded: {
    start_3ds: LATE,
    // the success that led here, reported again
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    refund_in_full: DUP,
    // back to succeeded without a second credit or a second payment.succeeded
    refund_reopened: move('succeeded'),
  },
};

describe('payment state machine', () => {
  it('covers all six statuses and six triggers', () => {
    expect(PAYMENT_STATUSES).to.have.length(6);
    expect(PAYMENT_TRIGGERS).to.have.length(6);
    expect(Object.keys(TABLE).sort()).to.deep.equal([...PAYMENT_STATUSES].sort());
  });

  for (const status of PAYMENT_STATUSES) {
    for (const trigger of PAYMENT_TRIGGERS) {
      const expected = TABLE[status][trigger];
      it(`${status} + ${trigger} → ${expected.kind === 'move' ? expected.to : expected.kind}`, () => {
        expect(decide(status, trigger)).to.deep.equal(expected);
      });
    }
  }

  it('credits the merchant only on the first move into succeeded', () => {
    const credits = PAYMENT_STATUSES.flatMap((s) => PAYMENT_TRIGGERS.map((t) => decide(s, t))).filter((d) => d.kind === 'move' && d.credit);
    expect(credits).to.have.length(2); // pending→succeeded and processing→succeeded
  });
});
