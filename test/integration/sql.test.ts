import { expect } from 'chai';
import { createDb, type Db } from '../../shared/db/knex';
import { runSql, sqlStatement } from '../../shared/db/sql/run';
import { createTestDatabase } from '../../scripts/lib/databases';

/** shared/db/sql: the one runner of the hand-tuned statements, and its prepared-statement switch. */
describe('shared/db/sql runner', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const statement = sqlStatement(
    'sql-test-echo',
    'select $1::int + 1 as n, (select count(*)::int from pg_prepared_statements where name = $2) as prepared',
  );

  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });

  async function withPool<T>(preparedStatements: boolean | undefined, fn: (db: Db) => Promise<T>): Promise<T> {
    const db = createDb(database.url, 1, preparedStatements === undefined ? {} : { preparedStatements });
    try {
      return await fn(db);
    } finally {
      await db.destroy();
    }
  }

  it('prepares a statement once per connection by default (DB_PREPARED_STATEMENTS=true)', async () => {
    await withPool(undefined, async (db) => {
      const [first] = await runSql<{ n: number; prepared: number }>(db, statement, [1, statement.name]);
      const [second] = await runSql<{ n: number; prepared: number }>(db, statement, [2, statement.name]);
      expect(first.n).to.equal(2);
      expect(second).to.deep.equal({ n: 3, prepared: 1 });
    });
  });

  it('sends the same text unnamed with preparedStatements false (a pooler in transaction mode)', async () => {
    await withPool(false, async (db) => {
      await runSql(db, statement, [1, statement.name]);
      const [row] = await runSql<{ n: number; prepared: number }>(db, statement, [2, statement.name]);
      expect(row).to.deep.equal({ n: 3, prepared: 0 });
    });
  });

  it('runs inside the caller’s transaction on its connection', async () => {
    await withPool(undefined, async (db) => {
      const seen = await db.transaction(async (trx) => {
        await trx.raw('create temporary table sql_test_t (x int) on commit drop');
        const write = sqlStatement('sql-test-insert', 'insert into sql_test_t values ($1) returning x');
        await runSql(trx, write, [7]);
        return (await trx('sql_test_t').select('x')).map((r) => r.x);
      });
      expect(seen).to.deep.equal([7]);
    });
  });

  it('refuses a second text under one name', () => {
    expect(() => sqlStatement('sql-test-echo', 'select 2')).to.throw(/two texts/);
  });
});
