import type { Knex } from 'knex';
import type pg from 'pg';
import type { Db } from './knex';

/** The part of knex's client that lends out the pool's pg connections. */
interface PoolClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

/** Each name's statement, as given and as sent: one name is one statement for the life of the process. */
const statements = new Map<string, { sql: string; text: string }>();

/**
 * Runs one statement as a named prepared statement on a connection of the pool: Postgres parses
 * and plans it once per connection instead of on every call. For the hottest statements (the
 * creation of a payment). Every `?` in `sql` is a placeholder (knex.raw's `??` identifiers and
 * `\?` escapes are not supported), and the query bypasses knex's query events.
 */
export async function queryPrepared<R>(db: Db, name: string, sql: string, values: Knex.Value[]): Promise<R[]> {
  let statement = statements.get(name);
  if (!statement) {
    let n = 0;
    statement = { sql, text: sql.replace(/\?/g, () => `$${++n}`) };
    statements.set(name, statement);
  } else if (statement.sql !== sql) {
    throw new Error(`prepared statement ${name} has another text`);
  }
  const { text } = statement;
  const client = db.client as PoolClient;
  const connection = await client.acquireConnection();
  try {
    return (await connection.query({ name, text, values })).rows as R[];
  } finally {
    await client.releaseConnection(connection);
  }
}
