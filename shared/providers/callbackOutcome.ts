import type { Executor } from '../db/knex';
import { runSql, sqlStatement, type SqlStatement } from '../db/sql/run';
import { plain, scopeSql, type OperationTables } from '../db/sql/operationTables';

/**
 * A stored callback's outcome (provider_callbacks processed_at, outcome): a callback is applied
 * at most once. Its rules, composed into the writer's statement (shared/operations/writer.ts)
 * and the mark of callbacks that change nothing:
 *
 * - a change that carries a callback is written only while that callback is unprocessed
 *   (`callbackUnprocessedSql`: the compare-and-set's guard), and marks it `applied` with the row
 *   (`callbackAppliedSql`, joined to what the statement wrote);
 * - a repeat or a late report marks it `duplicate` or `ignored-late`, only while unprocessed and
 *   while its operation still has the status and version it was decided on (`markCallbacks`).
 *
 * Postgres's now() stamps processed_at: the instant the outcome committed with, not a decision's.
 */

/** The guard of a write carrying callback `callbackId` (an expression; null: none): true unless that callback was processed. */
export const callbackUnprocessedSql = (callbackId: string) =>
  `not exists (select 1 from provider_callbacks pc where pc.id = ${callbackId} and pc.processed_at is not null)`;

/** Marks `applied` the callbacks of the rows of `written` (a relation with callback_id), each only while unprocessed. */
export const callbackAppliedSql = (written: string) =>
  `update provider_callbacks pc set processed_at = now(), outcome = 'applied' from ${written} where pc.id = ${written}.callback_id and pc.processed_at is null`;

/** A callback that changes nothing (a repeat, a late report): its outcome, and the row state that decided it. */
export interface CallbackMark {
  callbackId: string;
  outcome: 'duplicate' | 'ignored-late';
  /** the operation and the status and version it was read with: the mark is written only if they are still its own */
  id: string;
  from: { status: string; version: number };
}

/** The mark statement of a kind (built with its other statements: shared/operations/writer.ts `operationSql`). */
export function markCallbacksStatement(k: OperationTables): SqlStatement {
  return sqlStatement(
    `mark-callbacks-${k.name}`,
    `with x as materialized (
         select * from jsonb_to_recordset($1::jsonb) as x(callback_id uuid, outcome text, id text, from_status text, from_version int))
       update provider_callbacks pc set processed_at = now(), outcome = x.outcome
         from x
        where pc.id = any(array(select callback_id from x)) and pc.id = x.callback_id and pc.processed_at is null
          and exists (select 1 from ${plain(k.table)} o
                       where o.id = x.id and o.status = x.from_status and o.version = x.from_version${scopeSql(k, 'o')})
        returning pc.id`,
  );
}

/**
 * The outcomes of callbacks that change nothing, one statement for many: each callback is marked
 * processed only while it is unprocessed and its operation still has, in the statement's
 * snapshot, the status and version its outcome was decided on (the mark orders before any move
 * committed after it; a repeat or a late report stays one whatever comes next, so no row lock is
 * taken). Returns, in order, whether each was marked.
 */
export async function markCallbacks(db: Executor, k: { mark: SqlStatement }, ms: CallbackMark[]): Promise<boolean[]> {
  const rows = ms.map((m) => ({
    callback_id: m.callbackId,
    outcome: m.outcome,
    id: m.id,
    from_status: m.from.status,
    from_version: m.from.version,
  }));
  const marked = new Set((await runSql<{ id: string }>(db, k.mark, [JSON.stringify(rows)])).map((r) => r.id));
  // a callback given twice counts once, for its first
  return ms.map((m) => marked.delete(m.callbackId));
}
