import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// bigint (int8) columns come back as strings by default; every money value in this service is
// a safe integer (checked at the edge), so parse them as numbers and fail loudly otherwise.
pg.types.setTypeParser(20, (text: string) => {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`bigint ${text} is outside the safe integer range`);
  return n;
});

export type Db = Knex;
export type Trx = Knex.Transaction;
/** Anything queries can run on: the pool or an open transaction. */
export type Executor = Knex | Knex.Transaction;

export function createDb(databaseUrl: string, poolMax = 10): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: databaseUrl, application_name: process.env.PROCESS_NAME || 'svc' },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 10_000,
  });
}
