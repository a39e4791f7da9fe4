import type { EventType } from '../vocabulary';

/**
 * The state machine of every provider operation (pure). One `decide` reads a kind's table
 * (machines.ts); the kernel (transition.ts) writes what it decides.
 *
 * Glossary:
 * - operation: money we ask a provider to move, with our id as its idempotency key: a
 *   collection (payment), a refund, a payout.
 * - trigger: what happened to an operation (the provider accepted it, reported an outcome, the
 *   window ended, a refund changed what is left of a payment).
 * - outcome trigger: one a provider reports, or the sweep on its behalf: it may arrive late,
 *   after the operation reached another final status.
 */

export type Trigger =
  /** the provider accepted the request (our id is its idempotency key) */
  | 'sent'
  /** card: the client is sent to the 3-D Secure challenge */
  | 'start_3ds'
  /** the provider reports the money moved */
  | 'succeed'
  /** the provider reports a failure (refusal, wrong PIN, insufficient funds), or refused the request */
  | 'fail'
  /** the provider reports a cancellation, or the window ended without an outcome */
  | 'cancel'
  /** a refund was made and refunds still leave part of amount_charged */
  | 'refund_partial'
  /** refunds now cover amount_charged */
  | 'refund_in_full'
  /** a refund failed, so refunds no longer cover amount_charged */
  | 'refund_reopened';

export const TRIGGERS: Trigger[] = [
  'sent',
  'start_3ds',
  'succeed',
  'fail',
  'cancel',
  'refund_partial',
  'refund_in_full',
  'refund_reopened',
];

/** What a move does to the merchant's ledger (each kind says how: machines.ts, kinds). */
export type LedgerEffect =
  /** a collection succeeded: amount_net to available */
  | 'credit'
  /** money out reached the client: the amount in transit goes to the provider */
  | 'deliver'
  /** money out failed: what it took goes back to available */
  | 'return';

export type Decision<S extends string> =
  | {
      kind: 'move';
      to: S;
      /** the event the change sends, if any */
      event: EventType | null;
      /** the ledger posting the change makes, if any */
      effect: LedgerEffect | null;
      /** the operation reaches its outcome: `completed` is set */
      completes: boolean;
      /** a move out of a final status that the provider's word forces: the history says why */
      correction?: string;
    }
  /** the trigger is taken without a change of status (the provider accepted a payment's push) */
  | { kind: 'stay' }
  /** the trigger was already applied (a repeated callback): nothing changes */
  | { kind: 'duplicate' }
  /** the operation already reached another outcome (a late callback): recorded, nothing changes */
  | { kind: 'late' }
  /** a move no correct caller asks for (a bug, not a provider's report) */
  | { kind: 'illegal' };

export interface Machine<S extends string> {
  statuses: readonly S[];
  /** the statuses in which the provider still owes an outcome */
  open: readonly S[];
  /** status → trigger → next status (the same status: taken without a move) */
  moves: Record<S, Partial<Record<Trigger, S>>>;
  /** statuses in which a trigger has already had its effect */
  already: Partial<Record<Trigger, readonly S[]>>;
  /** triggers a provider reports: on a final status they are late, not illegal */
  outcomes: readonly Trigger[];
  /** the event and ledger effect of reaching each outcome */
  reached: Partial<Record<S, { event: EventType; effect: LedgerEffect | null }>>;
  /**
   * Moves out of a final status, when the provider contradicts itself in a way that moved money
   * (a success after a cancellation): they reach the outcome as if from an open status.
   */
  corrections?: Partial<Record<S, Partial<Record<Trigger, { to: S; reason: string }>>>>;
}

export const isOpen = <S extends string>(m: Machine<S>, s: S) => m.open.includes(s);

/** What `trigger` does to an operation in `status`. */
export function decide<S extends string>(m: Machine<S>, status: S, trigger: Trigger): Decision<S> {
  const to = m.moves[status][trigger];
  if (to === status) return { kind: 'stay' };
  if (to) {
    const reachesOutcome = isOpen(m, status) && !isOpen(m, to);
    const reached = reachesOutcome ? m.reached[to] : undefined;
    return {
      kind: 'move',
      to,
      event: reached?.event ?? null,
      effect: reached?.effect ?? null,
      completes: reachesOutcome,
    };
  }
  const correction = m.corrections?.[status]?.[trigger];
  if (correction) {
    const reached = m.reached[correction.to];
    return {
      kind: 'move',
      to: correction.to,
      event: reached?.event ?? null,
      effect: reached?.effect ?? null,
      completes: true,
      correction: correction.reason,
    };
  }
  if (m.already[trigger]?.includes(status)) return { kind: 'duplicate' };
  if (m.outcomes.includes(trigger) && !isOpen(m, status)) return { kind: 'late' };
  return { kind: 'illegal' };
}
