import type { Executor, Trx } from '../db/knex';
import { updateWithHistory } from '../db/sql/statusChange';
import type { OutboxWriter } from '../db/transact';
import { nowUnix } from '../domain/ids';
import { emitEvent } from '../webhooks/fanout';
import { decide, type Trigger } from './machine';
import type { OperationKind, OperationRow, TriggerDetails } from './kind';

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

export async function findRow<R extends OperationRow>(db: Executor, kind: OperationKind<R, any>, id: string): Promise<R | undefined> {
  return (await kind.model.query(db).findById(id)) as unknown as R | undefined;
}

/** Reads a row under SELECT ... FOR UPDATE: every change of an operation happens behind this lock. */
export async function lockRow<R extends OperationRow>(trx: Trx, kind: OperationKind<R, any>, id: string): Promise<R | undefined> {
  return (await kind.model.query(trx).findById(id).forUpdate()) as unknown as R | undefined;
}

/**
 * Applies `trigger` to a locked row. `patch` carries what the trigger changes besides the status
 * (a payment's amount_refunded); it is written whenever the trigger is taken.
 */
export async function applyTrigger<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any>,
  row: R,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Promise<{ outcome: TriggerOutcome; row: R }> {
  const d = decide(kind.machine, row.status, trigger);
  if (d.kind === 'illegal') throw new IllegalTransition(`${trigger} is not allowed on a ${row.status} ${kind.name} (${row.id})`);
  if (d.kind === 'duplicate') return { outcome: 'duplicate', row };
  if (d.kind === 'late') return { outcome: 'ignored-late', row };

  const change: Record<string, unknown> = { ...patch, updated_at: new Date() };
  const firstRef = details.providerRef && !row.provider_ref ? details.providerRef : null;
  if (firstRef) change.provider_ref = firstRef;
  if (trigger === 'sent') change.sent_at = new Date();

  if (d.kind === 'stay') {
    const changesObject = Object.keys(patch).length > 0 || (firstRef !== null && kind.providerRefVisible);
    if (changesObject) change.version = row.version + 1;
    const [updated] = await kind.model.query(trx).patch(change).where('id', row.id).returning('*');
    return { outcome: 'applied', row: updated as unknown as R };
  }

  change.status = d.to;
  change.version = row.version + 1;
  if (d.completes) change.completed = nowUnix();
  if (d.to === 'failed') {
    change.failure_code = details.failureCode ?? 'provider-failed';
    change.failure_message = details.failureMessage ?? `The provider reported a failure`;
  }
  const reason = d.correction ?? details.reason;
  const updated = await updateWithHistory<R>(trx, kind.model.tableName, row.id, change, { table: kind.history.table, column: kind.history.column, from: row.status, to: d.to, reason });
  if (kind.afterMove) await kind.afterMove(trx, outbox, updated, d.to);
  if (d.event) {
    await emitEvent(trx, outbox, {
      merchantId: row.merchant_id,
      environment: row.environment,
      type: d.event,
      objectId: row.id,
      objectVersion: updated.version,
      object: kind.eventObject(updated),
    });
  }
  if (d.effect) await kind.post(trx, updated, d.effect);
  return { outcome: 'applied', row: updated };
}
