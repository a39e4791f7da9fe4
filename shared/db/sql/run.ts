import type pg from 'pg';
import QueryStream from 'pg-query-stream';
import { preparesStatements, type Executor } from '../knex';

/**
 * The hand-tuned statements of the hot paths, one file per flow, each written once with `$n`
 * placeholders; `runSql` is the one way they run (`streamSql` through a cursor).
 *
 * Prepared statements (DB_PREPARED_STATEMENTS, default true): a statement is sent as a named
 * prepared statement, which Postgres parses and plans once per connection instead of at every
 * call (POST /v1/payments: about 1,600 → 2,000 created/s on the development machine). Behind a
 * pooler in transaction mode that does not track prepared statements (PgBouncer before 1.21, or
 * without `max_prepared_statements`), set it to false: the same text is then sent unnamed and
 * planned at each call. The switch is per pool (`createDb`).
 */

export interface SqlStatement {
  /** the prepared statement's name: one name is one text for the life of the process */
  readonly name: string;
  readonly text: string;
}

const names = new Map<string, string>();

/** Declares a statement of this folder; a second text under one name is a programming error. */
export function sqlStatement(name: string, text: string): SqlStatement {
  const known = names.get(name);
  if (known !== undefined && known !== text) throw new Error(`sql statement ${name} has two texts`);
  names.set(name, text);
  return { name, text };
}

/** The part of knex's client that lends out its pg connections (a transaction's lends its own). */
interface ConnectionLender {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

/**
 * Runs a statement of this folder on the pool (its own transaction) or inside the caller's
 * transaction, and returns its rows. It bypasses knex's query events.
 */
export async function runSql<R>(db: Executor, statement: SqlStatement, values: unknown[]): Promise<R[]> {
  const client = db.client as unknown as ConnectionLender;
  const connection = await client.acquireConnection();
  try {
    const query = preparesStatements(db)
      ? { name: statement.name, text: statement.text, values }
      : { text: statement.text, values };
    return (await connection.query(query)).rows as R[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/**
 * Runs a statement of this folder through a Postgres cursor (`batchSize` rows a fetch) and yields
 * its rows as they come, on a connection lent for as long as the rows are read: memory stays flat
 * whatever their number. A consumer that stops early (or fails) closes the cursor, then the
 * connection goes back to the pool. A cursor's statement is sent unnamed, whatever
 * DB_PREPARED_STATEMENTS says.
 */
export async function* streamSql<R>(
  db: Executor,
  statement: SqlStatement,
  values: unknown[],
  batchSize: number,
): AsyncGenerator<R> {
  const client = db.client as unknown as ConnectionLender;
  const connection = await client.acquireConnection();
  const rows = connection.query(new QueryStream(statement.text, values, { batchSize }));
  try {
    for await (const row of rows as AsyncIterable<R>) yield row;
  } finally {
    if (!rows.destroyed) rows.destroy();
    if (!rows.closed) await new Promise<void>((resolve) => rows.once('close', () => resolve()));
    await client.releaseConnection(connection);
  }
}
