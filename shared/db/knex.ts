import knexFactory, { type Knex } from 'knex';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import pg from 'pg';

// bigint (int8) columns come back as strings by default. Amounts, fees and limits are at most
// 10^12 (shared/money.ts) and ids, counts and timestamps far below 2^53, so they are parsed as
// numbers; a value beyond the safe integers (a sum: a balance, a settlement figure) is kept exact
// as a bigint rather than rounded, and never thrown on: a parser that throws fails every query
// that reads the value, a merchant's balance or the settlement of every merchant after it.
pg.types.setTypeParser(20, (text: string) => {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
});

export type Db = Knex;
export type Trx = Knex.Transaction;
/** Anything queries can run on: the pool or an open transaction. */
export type Executor = Knex | Knex.Transaction;

export interface DbOptions {
  /** the hand-tuned statements (shared/db/sql) run as named prepared statements; default true (DB_PREPARED_STATEMENTS) */
  preparedStatements?: boolean;
  /** connections the pool keeps open when idle (DB_POOL_MIN, default 2): a burst finds them warm */
  poolMin?: number;
  /** bounded waits of a service process (createContext); scripts (migrations, tools) wait as long as their statements take */
  waits?: DbWaits;
}

/**
 * Bounded waits (docs/decisions.md#faults-and-limits: a partition is an outage, not a hang). A
 * caller waits at most `acquireMs` for a connection of the pool (or for a new one to open), and
 * a statement sent on a connection that then receives nothing for `silentMs` is taken as a lost
 * connection: the socket is destroyed, the statement fails (its transaction with it), and the
 * pool drops the connection. A web request's two waits add up to at most 5 s (then 503
 * service-unavailable); a worker's job fails and is retried. A cursor is paced by its reader and
 * is not judged by silence. TCP keep-alive finds idle pooled connections that died.
 */
export interface DbWaits {
  acquireMs: number;
  silentMs: number;
}
export const WAITS: Record<'web' | 'worker', DbWaits> = {
  web: { acquireMs: 2000, silentMs: 3000 },
  // settlement and sweeps may read for long: a worker only needs to fail rather than hang
  worker: { acquireMs: 10_000, silentMs: 30_000 },
};

/** pg's client, with the two fields of its own that tell whether a statement awaits an answer. */
type PgClient = pg.Client & { connection: { stream: Socket }; _activeQuery: unknown; _queryQueue: unknown[] };

/** Destroys a connection whose statement has received nothing for `silentMs` (DbWaits). */
function watchSilence(connection: PgClient, silentMs: number): void {
  const socket = connection.connection.stream;
  socket.setTimeout(silentMs);
  socket.on('timeout', () => {
    const active = connection._activeQuery;
    const waiting = (active && !(active instanceof Readable)) || connection._queryQueue.length > 0;
    if (waiting) socket.destroy(new Error(`Connection terminated: Postgres sent nothing for ${silentMs} ms`));
  });
}

/** Whether statements are prepared: kept in the pool's knex config (which its transactions share), beside knex's own settings. */
interface PoolConfig {
  preparedStatements?: boolean;
}

export function createDb(databaseUrl: string, poolMax = 10, opts: DbOptions = {}): Knex {
  const waits = opts.waits;
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: databaseUrl,
      application_name: process.env.PROCESS_NAME || 'svc',
      connectionTimeoutMillis: waits?.acquireMs ?? 0,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    },
    pool: {
      min: Math.min(opts.poolMin ?? 0, poolMax),
      max: poolMax,
      // the pool looks for idle connections to close every 10 s rather than tarn's every second: an idle
      // process wakes for it a tenth as often, and a connection idle 30 s (tarn's idleTimeoutMillis) closes within 40
      reapIntervalMillis: 10_000,
      afterCreate(connection: PgClient, done: (err: Error | null, connection: PgClient) => void) {
        if (waits) watchSilence(connection, waits.silentMs);
        done(null, connection);
      },
    },
    acquireConnectionTimeout: waits?.acquireMs ?? 10_000,
    preparedStatements: opts.preparedStatements ?? true,
  } as Knex.Config & PoolConfig);
}

/** Whether `db` (a pool or one of its transactions) sends shared/db/sql's statements prepared. */
export function preparesStatements(db: Executor): boolean {
  return (db.client.config as PoolConfig).preparedStatements ?? true;
}
