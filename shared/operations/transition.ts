import type { Executor, Trx } from '../db/knex';
import { updateWithHistory } from '../db/sql/statusChange';
import { findOperation } from '../db/sql/transitions';
import type { OutboxWriter } from '../db/transact';
import { emitEvent } from '../events/fanout';
import { decide, type Decision, type Trigger } from './machine';
import type { OperationKind, TriggerDetails } from './kind';
import type { OperationRow } from '../db/rows';

/**
 * The one place an operation changes after its creation. The caller holds the transaction and
 * the row's lock (lockRow); `decide` says what the trigger does, and the change, its history
 * row, what it changes beyond its row (afterMove), its event with its webhook deliveries and its
 * ledger posting are written together, in that order: the posting last, so that the merchant's
 * accounts it locks are held only until the commit.
 */

/** What applying a trigger did (also a stored callback's outcome). */
export type TriggerOutcome = 'applied' | 'duplicate' | 'ignored-late';

export class IllegalTransition extends Error {}

export async function findRow<R extends OperationRow>(db: Executor, kind: OperationKind<R, any, any>, id: string): Promise<R | undefined> {
  return findOperation<R>(db, kind, id);
}

/**
 * Reads a row under SELECT ... FOR UPDATE: every change of an operation happens behind this lock.
 * It and the transition's writes below are part of the caller's multi-table transaction (the row,
 * its history, event and posting, a callback's inbox row) on the hot path (a push, a callback):
 * the knex builder on that transaction, not the models (about half their CPU per statement).
 */
export async function lockRow<R extends OperationRow>(trx: Trx, kind: OperationKind<R, any, any>, id: string): Promise<R | undefined> {
  return trx<R>(kind.model.tableName).where({ ...kind.scope, id } as any).forUpdate().first() as Promise<R | undefined>;
}

/**
 * What a taken trigger writes on its row (pure): `patch`, then updated_at, the first
 * provider_ref, sent_at for `sent`; for a move the status, version, completed and failure; for a
 * stay the version when the object changes.
 */
export function changeOf<R extends OperationRow>(
  kind: OperationKind<R, any>,
  row: R,
  d: Extract<Decision<string>, { kind: 'move' | 'stay' }>,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Record<string, unknown> {
  const change: Record<string, unknown> = { ...patch, updated_at: new Date(details.at) };
  const firstRef = details.providerRef && !row.provider_ref ? details.providerRef : null;
  if (firstRef) change.provider_ref = firstRef;
  if (trigger === 'sent') change.sent_at = new Date(details.at);
  if (d.kind === 'stay') {
    const changesObject = Object.keys(patch).length > 0 || (firstRef !== null && kind.providerRefVisible);
    if (changesObject) change.version = row.version + 1;
    return change;
  }
  change.status = d.to;
  change.version = row.version + 1;
  if (d.completes) change.completed = Math.floor(details.at / 1000);
  if (d.to === 'failed') {
    change.failure_code = details.failureCode ?? 'provider-failed';
    change.failure_message = details.failureMessage ?? `The provider reported a failure`;
  } else if (row.failure_code) {
    // a late success corrects a failure: the failure it reported no longer stands
    change.failure_code = null;
    change.failure_message = null;
  }
  return change;
}

/**
 * Applies `trigger` to a locked row. `patch` carries what the trigger changes besides the status
 * (a payment's amount_refunded); it is written whenever the trigger is taken.
 */
export async function applyTrigger<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any, any>,
  row: R,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Promise<{ outcome: TriggerOutcome; row: R }> {
  const d = decide(kind.machine, row.status, trigger);
  if (d.kind === 'illegal') throw new IllegalTransition(`${trigger} is not allowed on a ${row.status} ${kind.name} (${row.id})`);
  if (d.kind === 'duplicate') return { outcome: 'duplicate', row };
  if (d.kind === 'late') return { outcome: 'ignored-late', row };

  const change = changeOf(kind, row, d, trigger, details, patch);
  if (d.kind === 'stay') {
    // in the caller's multi-table transaction, on the hot path (a push): the knex builder (see lockRow)
    const [updated] = await trx(kind.model.tableName).where({ id: row.id }).update(change).returning('*');
    return { outcome: 'applied', row: updated as R };
  }
  const reason = d.correction ?? details.reason;
  const updated = await updateWithHistory<R>(trx, kind.model.tableName, row.id, change, { table: kind.history.tableName, column: kind.history.column, from: row.status, to: d.to, reason });
  if (kind.afterMove) await kind.afterMove(trx, outbox, updated, d.to, details.at);
  if (d.event) {
    await emitEvent(trx, outbox, {
      merchantId: row.merchant_id,
      environment: row.environment,
      type: d.event,
      objectId: row.id,
      objectVersion: updated.version,
      object: kind.eventObject(updated),
      at: details.at,
    });
  }
  if (d.effect) await kind.post(trx, updated, d.effect);
  return { outcome: 'applied', row: updated };
}
