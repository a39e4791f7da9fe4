import type { OperationRow } from '../db/rows';
import type { StoredCallback } from '../providers/connector';
import { amountDiffers } from '../providers/stored';
import type { OperationKind } from './kind';
import { decide, type Decision, type Trigger } from './stateMachine';

/**
 * The one decision of every path that changes an operation (pure): the locked path
 * (transition.ts `applyTrigger`, callbacks.ts `applyStoredCallback`, send.ts `recordAcceptance`)
 * and the lock-free one (oneStatement.ts `applyCallbackInOneStatement`, send.ts
 * `recordSentAlone`) each read a row and ask `decideTransition` what a trigger does to it; a path
 * only carries the answer out, or leaves it to the locked path when it cannot (a refusal, a
 * posting that takes from a balance, a move with more to change than its row). A new rule is
 * written here, once; test/integration/operations-decision.test.ts requires both paths to agree
 * on every case.
 */

/** What a provider's report brings beside its trigger: who sent it, whether it is confirmed, what it says moved. */
export interface Report extends Pick<StoredCallback, 'amount' | 'currency'> {
  /** the provider that reported, as configured (a callback's `/callbacks/{provider}`) */
  provider: { id: string; environment: string };
  /** signed, or confirmed by its provider's status query; false: nothing confirms it yet */
  confirmed: boolean;
  // amount, currency: what it says moved; null: it does not say
}

/** Why a report is not applied: recorded on its inbox row (listed by GET /admin/attention), the operation unchanged. */
export type Refusal =
  /** the operation is not handled by the provider that reported (another provider or environment) */
  | 'provider-mismatch'
  /** the operation was never sent to that provider */
  | 'never-sent'
  /** unsigned, and its provider's status query found no final outcome */
  | 'unconfirmed'
  /** the report names another amount or currency than the operation asked the provider to move */
  | 'amount-mismatch';

export type Verdict<S extends string = string> = Decision<S> | { kind: 'refused'; outcome: Refusal };

/** What of a kind the decision reads: its machine, and what says whether a report may decide a row. */
type DecidingKind<R extends OperationRow, S extends string> = Pick<
  OperationKind<R, S, any>,
  'machine' | 'neverSent' | 'moved'
>;

/**
 * What `trigger` does to `row`, an operation of `kind`: with a provider's `report`, first whether
 * the report may decide it at all (its provider, the row's state, its confirmation, its amount, in
 * that order), then the kind's machine (machine.ts `decide`: move, stay, duplicate, late or illegal).
 * Without a report the trigger is the service's own (the provider's acceptance of a request, its
 * refusal, the window's end, a refund of the payment).
 */
export function decideTransition<R extends OperationRow, S extends string>(
  kind: DecidingKind<R, S>,
  row: R,
  trigger: Trigger,
): Decision<S>;
export function decideTransition<R extends OperationRow, S extends string>(
  kind: DecidingKind<R, S>,
  row: R,
  trigger: Trigger,
  report: Report | undefined,
): Verdict<S>;
export function decideTransition<R extends OperationRow, S extends string>(
  kind: DecidingKind<R, S>,
  row: R,
  trigger: Trigger,
  report?: Report,
): Verdict<S> {
  if (report) {
    // only the provider that handles the operation decides it (not a sandbox's secret for a live payment)
    if (row.provider !== report.provider.id || row.environment !== report.provider.environment)
      return { kind: 'refused', outcome: 'provider-mismatch' };
    if (kind.neverSent?.(row)) return { kind: 'refused', outcome: 'never-sent' };
    if (!report.confirmed) return { kind: 'refused', outcome: 'unconfirmed' };
    if (amountDiffers(report, kind.moved(row))) return { kind: 'refused', outcome: 'amount-mismatch' };
  }
  return decide(kind.machine, row.status as S, trigger);
}
