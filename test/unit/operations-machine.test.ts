import { expect } from 'chai';
import { decide, TRIGGERS, type Decision, type Machine, type Trigger } from '../../shared/operations/stateMachine';
import { cardPaymentMachine, paymentMachine, payoutMachine, refundMachine } from '../../shared/operations/kindMachines';
import type { EventType } from '../../shared/vocabulary';
import { KINDS as KERNEL_KINDS } from '../../shared/kindRegistry';

/**
 * Every (status, trigger) pair of every kind of provider operation, allowed or not: the one table
 * that says what each trigger does (shared/operations/kindMachines.ts).
 */

type D = Decision<string>;
const move = (
  to: string,
  event: EventType | null = null,
  effect: 'credit' | 'deliver' | 'return' | null = null,
  completes = false,
): D => ({ kind: 'move', to, event, effect, completes });
const STAY: D = { kind: 'stay' };
const DUP: D = { kind: 'duplicate' };
const LATE: D = { kind: 'late' };
const ILLEGAL: D = { kind: 'illegal' };

const PAYMENT: Record<string, Record<Trigger, D>> = {
  // a mobile-money payment is created processing: nothing moves out of pending (card payments: CARD below)
  pending: {
    sent: ILLEGAL,
    start_3ds: ILLEGAL,
    succeed: ILLEGAL,
    fail: ILLEGAL,
    cancel: ILLEGAL,
    refund_partial: ILLEGAL,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  processing: {
    // the push was accepted: the payment waits for the client
    sent: STAY,
    // mobile money has no 3-D Secure
    start_3ds: ILLEGAL,
    succeed: move('succeeded', 'payment.succeeded', 'credit', true),
    fail: move('failed', 'payment.failed', null, true),
    cancel: move('cancelled', 'payment.cancelled', null, true),
    refund_partial: ILLEGAL,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  succeeded: {
    sent: LATE,
    start_3ds: LATE,
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    // only its refunded amount changes
    refund_partial: STAY,
    // a full refund sends no payment event and moves no money here (the refund does)
    refund_in_full: move('refunded'),
    refund_reopened: STAY,
  },
  // a success after a failure contradicts the failure: the money moved, taken like a late success after a cancellation
  failed: {
    sent: LATE,
    start_3ds: LATE,
    succeed: { ...move('succeeded', 'payment.succeeded', 'credit', true), correction: 'late-success' } as D,
    fail: DUP,
    cancel: LATE,
    refund_partial: ILLEGAL,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  // the provider's late success is money that moved: taken, credited, announced (docs/decisions.md#late-success)
  cancelled: {
    sent: LATE,
    start_3ds: LATE,
    succeed: { ...move('succeeded', 'payment.succeeded', 'credit', true), correction: 'late-success' } as D,
    fail: LATE,
    cancel: DUP,
    refund_partial: ILLEGAL,
    refund_in_full: ILLEGAL,
    refund_reopened: ILLEGAL,
  },
  refunded: {
    sent: LATE,
    start_3ds: LATE,
    // the success that led here, reported again
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    refund_partial: ILLEGAL,
    refund_in_full: DUP,
    // back to succeeded without a second credit or a second payment.succeeded
    refund_reopened: move('succeeded'),
  },
};

const MONEY_OUT_ONLY: Partial<Record<Trigger, D>> = {
  start_3ds: ILLEGAL,
  cancel: ILLEGAL,
  refund_partial: ILLEGAL,
  refund_in_full: ILLEGAL,
  refund_reopened: ILLEGAL,
};

const REFUND: Record<string, Record<Trigger, D>> = {
  pending: {
    ...MONEY_OUT_ONLY,
    sent: STAY,
    succeed: move('succeeded', 'refund.succeeded', 'deliver', true),
    fail: move('failed', 'refund.failed', 'return', true),
  } as Record<Trigger, D>,
  succeeded: { ...MONEY_OUT_ONLY, sent: LATE, succeed: DUP, fail: LATE } as Record<Trigger, D>,
  failed: { ...MONEY_OUT_ONLY, sent: LATE, succeed: LATE, fail: DUP } as Record<Trigger, D>,
};

const PAYOUT: Record<string, Record<Trigger, D>> = {
  // an outcome may overtake the acceptance (a fast callback)
  pending: {
    ...MONEY_OUT_ONLY,
    sent: move('processing'),
    succeed: move('succeeded', 'payout.succeeded', 'deliver', true),
    fail: move('failed', 'payout.failed', 'return', true),
  } as Record<Trigger, D>,
  processing: {
    ...MONEY_OUT_ONLY,
    sent: DUP,
    succeed: move('succeeded', 'payout.succeeded', 'deliver', true),
    fail: move('failed', 'payout.failed', 'return', true),
  } as Record<Trigger, D>,
  succeeded: { ...MONEY_OUT_ONLY, sent: LATE, succeed: DUP, fail: LATE } as Record<Trigger, D>,
  failed: { ...MONEY_OUT_ONLY, sent: LATE, succeed: LATE, fail: DUP } as Record<Trigger, D>,
};

const NO_REFUND: Partial<Record<Trigger, D>> = {
  refund_partial: ILLEGAL,
  refund_in_full: ILLEGAL,
  refund_reopened: ILLEGAL,
};

/**
 * A card payment: never refunded through the merchant API (docs/decisions.md#cards-hosted-checkout);
 * the operator's refunds (docs/decisions.md#operator-admin-api) move a succeeded one as a
 * mobile-money payment's do, so only `succeeded` and `refunded` take refund triggers.
 */
const CARD: Record<string, Record<Trigger, D>> = {
  pending: {
    ...NO_REFUND,
    // the acquirer approved the charge: still pending until its callback
    sent: STAY,
    // the acquirer asks for 3-D Secure
    start_3ds: move('processing'),
    succeed: move('succeeded', 'payment.succeeded', 'credit', true),
    // declined, or failed
    fail: move('failed', 'payment.failed', null, true),
    // the 30-minute checkout window is over
    cancel: move('cancelled', 'payment.cancelled', null, true),
  } as Record<Trigger, D>,
  processing: {
    ...NO_REFUND,
    // the challenge is the acquirer's answer to the charge: both already happened
    sent: DUP,
    start_3ds: DUP,
    succeed: move('succeeded', 'payment.succeeded', 'credit', true),
    // authentication failed
    fail: move('failed', 'payment.failed', null, true),
    // the 3-D Secure window is over
    cancel: move('cancelled', 'payment.cancelled', null, true),
  } as Record<Trigger, D>,
  succeeded: {
    sent: LATE,
    start_3ds: LATE,
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    // an operator's refund: only its refunded amount changes, or it becomes refunded (the refund moves the money)
    refund_partial: STAY,
    refund_in_full: move('refunded'),
    refund_reopened: STAY,
  },
  refunded: {
    sent: LATE,
    start_3ds: LATE,
    succeed: DUP,
    fail: LATE,
    cancel: LATE,
    refund_partial: ILLEGAL,
    refund_in_full: DUP,
    // one of its refunds failed: back to succeeded, without a second credit or payment.succeeded
    refund_reopened: move('succeeded'),
  },
  failed: {
    ...NO_REFUND,
    sent: LATE,
    start_3ds: LATE,
    succeed: { ...move('succeeded', 'payment.succeeded', 'credit', true), correction: 'late-success' } as D,
    fail: DUP,
    cancel: LATE,
  } as Record<Trigger, D>,
  // a success the acquirer reports after the cancellation is money that moved (docs/decisions.md#late-success)
  cancelled: {
    ...NO_REFUND,
    sent: LATE,
    start_3ds: LATE,
    succeed: { ...move('succeeded', 'payment.succeeded', 'credit', true), correction: 'late-success' } as D,
    fail: LATE,
    cancel: DUP,
  } as Record<Trigger, D>,
};

/** The only (status, trigger) pairs that post to the ledger. */
const MONEY_MOVES: Record<string, string[]> = {
  payment: ['processing+succeed', 'failed+succeed', 'cancelled+succeed'],
  refund: ['pending+succeed', 'pending+fail'],
  payout: ['pending+succeed', 'pending+fail', 'processing+succeed', 'processing+fail'],
  card_payment: ['pending+succeed', 'processing+succeed', 'failed+succeed', 'cancelled+succeed'],
};

const KINDS: [string, Machine<any>, Record<string, Record<Trigger, D>>][] = [
  ['payment', paymentMachine, PAYMENT],
  ['refund', refundMachine, REFUND],
  ['payout', payoutMachine, PAYOUT],
  ['card_payment', cardPaymentMachine, CARD],
];

describe('operations state machine', () => {
  it('has a table for every kind of the kernel, with that kind’s machine', () => {
    expect(Object.keys(KERNEL_KINDS).sort()).to.deep.equal(KINDS.map(([name]) => name).sort());
    for (const [name, machine] of KINDS)
      expect(KERNEL_KINDS[name as keyof typeof KERNEL_KINDS].machine, name).to.equal(machine);
  });

  for (const [name, machine, table] of KINDS) {
    describe(name, () => {
      it('the table names every status of the kind', () => {
        expect(Object.keys(table).sort()).to.deep.equal([...machine.statuses].sort());
      });
      for (const status of machine.statuses) {
        for (const trigger of TRIGGERS) {
          const expected = table[status][trigger];
          it(`${status} + ${trigger} → ${expected.kind === 'move' ? expected.to : expected.kind}`, () => {
            expect(decide(machine, status, trigger)).to.deep.equal(expected);
          });
        }
      }
      it('moves money only on a first move into an outcome', () => {
        const effects = machine.statuses
          .flatMap((s: string) => TRIGGERS.map((t) => [s, t, decide(machine, s, t)] as const))
          .filter(([, , d]) => d.kind === 'move' && d.effect);
        expect(effects.map(([s, t]) => `${s}+${t}`)).to.deep.equal(MONEY_MOVES[name]);
      });
    });
  }
});
