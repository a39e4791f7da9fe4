import type { Trx } from '../knex';
import { runSql, sqlStatement, type SqlStatement } from './run';

/** A status change as its history table records it (each operation kind names its own: shared/operations/kind.ts). */
export interface StatusChange {
  /** the history table, and its column naming the object */
  table: string;
  column: string;
  from: string | null;
  to: string;
  reason: string;
}

/** One statement per (table, history table, changed columns): a kind's transitions change few sets of columns. */
const statements = new Map<string, SqlStatement>();

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function statementFor(table: string, columns: string[], change: StatusChange): SqlStatement {
  const key = [table, change.table, change.column, ...columns].join(' ');
  let statement = statements.get(key);
  if (!statement) {
    for (const name of [table, change.table, change.column, ...columns]) if (!IDENTIFIER.test(name)) throw new Error(`not an identifier: ${name}`);
    const n = columns.length;
    statement = sqlStatement(
      `status-change-${statements.size + 1}`,
      `with u as (update ${table} set ${columns.map((c, i) => `${c} = $${i + 2}`).join(', ')} where id = $1 returning *),
            h as (insert into ${change.table} (${change.column}, from_status, to_status, reason, at) select id, $${n + 2}, $${n + 3}, $${n + 4}, clock_timestamp() from u)
       select * from u`,
    );
    statements.set(key, statement);
  }
  return statement;
}

/**
 * Updates one row of an operation (already locked by the caller) and writes its history row in
 * the same statement; `at` is clock_timestamp(), the moment of the change, not the start of its
 * transaction. Returns the updated row.
 */
export async function updateWithHistory<R>(trx: Trx, table: string, id: string, patch: Record<string, unknown>, change: StatusChange): Promise<R> {
  const columns = Object.keys(patch).filter((c) => patch[c] !== undefined).sort();
  const rows = await runSql<R>(trx, statementFor(table, columns, change), [id, ...columns.map((c) => patch[c]), change.from, change.to, change.reason]);
  return rows[0];
}
