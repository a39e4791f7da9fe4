import pg from 'pg';
import { ConfigError } from '../config';

/**
 * Behind PgBouncer in transaction pooling (1.18: no protocol-level prepared statements) the
 * service keeps no session state (no session advisory lock, no session SET: every setting is
 * `set_config(…, true)`, every lock `pg_advisory_xact_lock`), and its named prepared statements
 * must be off (DB_PREPARED_STATEMENTS=false): the next transaction may run on another server
 * connection, which never prepared them.
 *
 * The pooler is recognised by what it refuses: a startup parameter Postgres takes
 * (statement_timeout) but PgBouncer does not know ("unsupported startup parameter"). A probe
 * connection with it tells the two apart at start; with prepared statements on, PgBouncer is
 * refused.
 */
export async function checkPooler(databaseUrl: string, preparedStatements: boolean): Promise<void> {
  if (!preparedStatements) return;
  const probe = new pg.Client({
    connectionString: databaseUrl,
    statement_timeout: 60_000,
    connectionTimeoutMillis: 5000,
  });
  try {
    await probe.connect();
  } catch (err) {
    if (!/unsupported startup parameter/i.test((err as Error).message)) throw err;
    throw new ConfigError(
      'DATABASE_URL reaches Postgres through PgBouncer (transaction pooling), which keeps no prepared statements: set DB_PREPARED_STATEMENTS=false',
    );
  } finally {
    await probe.end().catch(() => undefined);
  }
}
