import { getConfig } from '../shared/config';
import { createDb } from '../shared/db/knex';
import { ensureDatabase, migrateLatest } from '../shared/db/migrate';

/** `npm run migrate`: creates the database if needed and applies the migrations not applied yet. */
export async function migrate(databaseUrl = getConfig().databaseUrl): Promise<string[]> {
  await ensureDatabase(databaseUrl, createDb);
  const db = createDb(databaseUrl, 1);
  try {
    return await migrateLatest(db);
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  migrate()
    .then((applied) => {
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    })
    .catch((err) => {
      process.stderr.write(`migration failed: ${err.message}\n`);
      process.exit(1);
    });
}
