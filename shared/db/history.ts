import type { Trx } from './knex';

/** A status change as its history table records it (each operation kind names its own: shared/operations/kind.ts). */
export interface StatusChange {
  /** the history table, and its column naming the object */
  table: string;
  column: string;
  from: string | null;
  to: string;
  reason: string;
}

/**
 * Updates one row of a stateful object (already locked by the caller) and writes its history row
 * in the same statement; `at` is clock_timestamp(), the moment of the change, not the start of
 * its transaction. Returns the updated row.
 */
export async function updateWithHistory<R>(trx: Trx, table: string, id: string, patch: object, change: StatusChange): Promise<R> {
  const update = trx(table).where({ id }).update(patch).returning('*').toSQL();
  const { rows } = await trx.raw(
    `with u as (${update.sql}),
          h as (insert into ${change.table} (${change.column}, from_status, to_status, reason, at) select id, ?, ?, ?, clock_timestamp() from u)
     select * from u`,
    [...update.bindings, change.from, change.to, change.reason],
  );
  return rows[0] as R;
}
