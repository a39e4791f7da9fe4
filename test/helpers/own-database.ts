import { createDb, type Db } from '../../shared/db/knex';
import { createTestDatabase } from '../../scripts/lib/databases';

/**
 * A migrated database of its own for the enclosing `describe`, with a pool of two handed to
 * `use` before the describe's own `before` hooks run; destroyed and dropped after its tests.
 */
export function ownDatabase(use: (db: Db) => void): void {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let db: Db | undefined;
  before(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, 2);
    use(db);
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });
}
