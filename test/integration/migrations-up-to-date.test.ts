import { expect } from 'chai';
import pg from 'pg';
import { createTestDatabase } from '../../scripts/lib/databases';
import { migrationsUpToDate } from '../../shared/db/migrate';

/** `npm start` runs the migrator only when the database has not applied exactly the folder's migrations. */
describe('migrationsUpToDate (npm start skips the migrator)', function () {
  this.timeout(30_000);
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };

  beforeEach(async () => (db = await createTestDatabase()));
  afterEach(() => db.drop());

  it('is true for a database that applied every migration of the folder', async () => {
    expect(await migrationsUpToDate(db.url)).to.equal(true);
  });

  it('is false when a migration of the folder is not applied', async () => {
    await sql(`delete from knex_migrations where id = (select max(id) from knex_migrations)`);
    expect(await migrationsUpToDate(db.url)).to.equal(false);
  });

  it('is false when the database records a migration the folder does not have (the migrator says what is wrong)', async () => {
    await sql(`insert into knex_migrations (name, batch, migration_time) values ('20990101000000_gone.ts', 99, now())`);
    expect(await migrationsUpToDate(db.url)).to.equal(false);
  });

  it('is false without the table or the database', async () => {
    await sql('drop table knex_migrations');
    expect(await migrationsUpToDate(db.url)).to.equal(false);
    const missing = new URL(db.url);
    missing.pathname = '/svc_no_such_database';
    expect(await migrationsUpToDate(missing.toString())).to.equal(false);
  });
});
