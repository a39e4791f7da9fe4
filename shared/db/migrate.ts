import path from 'node:path';
import type { Knex } from 'knex';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/** Applies every migration not applied yet (TypeScript files, loaded through tsx). */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = await db.migrate.latest({ directory: MIGRATIONS_DIR, loadExtensions: ['.ts'] });
  return applied as string[];
}

/** Creates the database named in the URL if it does not exist yet (development convenience). */
export async function ensureDatabase(databaseUrl: string, createDb: (url: string) => Knex): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = createDb(url.toString());
  try {
    const { rows } = await admin.raw('select 1 from pg_database where datname = ?', [name]);
    if (rows.length === 0) await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
}
