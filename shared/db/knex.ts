import knexFactory, { type Knex } from 'knex';
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
}

/** Per pool (its knex config object, which its transactions share): whether statements are prepared. */
const prepared = new WeakMap<object, boolean>();

export function createDb(databaseUrl: string, poolMax = 10, opts: DbOptions = {}): Knex {
  const db = knexFactory({
    client: 'pg',
    connection: { connectionString: databaseUrl, application_name: process.env.PROCESS_NAME || 'svc' },
    pool: { min: Math.min(opts.poolMin ?? 0, poolMax), max: poolMax },
    acquireConnectionTimeout: 10_000,
  });
  prepared.set(db.client.config, opts.preparedStatements ?? true);
  return db;
}

/** Whether `db` (a pool or one of its transactions) sends shared/db/sql's statements prepared. */
export function preparesStatements(db: Executor): boolean {
  return prepared.get(db.client.config) ?? true;
}
