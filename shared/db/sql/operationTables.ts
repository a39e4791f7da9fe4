/**
 * An operation kind's tables as its statements name them (the reads: operationReads.ts; the
 * writer: shared/operations/writer.ts; a callback's mark: shared/providers/callbackOutcome.ts).
 * Their names are the kernel's constants, checked plain before they enter a statement's text.
 */

export interface OperationTables {
  /** the kind's name (the statements' names) */
  name: string;
  table: string;
  /** when kinds share a table: the column values of this kind's rows (kernel constants) */
  scope?: Record<string, string>;
  /** its history table, and the column naming the row */
  history: { table: string; column: string };
  /** the columns of a row (shared/db/rows.ts) */
  columns: readonly string[];
  /** the order new rows are inserted in: two batches that share a unique value wait for each other instead of deadlocking */
  insertOrder: string;
}

const PLAIN = /^[a-z_][a-z0-9_]*$/;

/** A table's or a column's name, refused unless plain (it goes into a statement's text as is). */
export function plain(name: string): string {
  if (!PLAIN.test(name)) throw new Error(`not a plain name: ${name}`);
  return name;
}

/** The kind's scope as conditions on `alias` (its values are the kernel's constants, quoted as literals). */
export function scopeSql(k: OperationTables, alias: string): string {
  return Object.entries(k.scope ?? {})
    .map(([column, value]) => ` and ${alias}.${plain(column)} = '${plain(value)}'`)
    .join('');
}
