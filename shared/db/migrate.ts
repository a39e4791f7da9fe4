import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';

/** The migrations' folder: beside this file, or beside its source when this runs compiled (build/shared/db: build/ leaves them out). */
const BESIDE = path.join(__dirname, 'migrations');
const MIGRATIONS_DIR = existsSync(BESIDE) ? BESIDE : path.resolve(__dirname, '../../../shared/db/migrations');

/** Applies every migration not applied yet (TypeScript files, loaded through tsx). */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = await db.migrate.latest({ directory: MIGRATIONS_DIR, loadExtensions: ['.ts'] });
  return applied as string[];
}

/**
 * Whether the database has applied exactly the migrations of the folder (knex_migrations, where
 * knex records each by file name), read with one query and without loading a migration or
 * TypeScript: `npm start` runs the migrator (tsx) only when it has not. A migration pending, one
 * recorded that the folder no longer has (the migrator then says what is wrong), a database or
 * table that does not exist yet: not up to date.
 */
export async function migrationsUpToDate(databaseUrl: string): Promise<boolean> {
  const files = new Set(readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.ts')));
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ name: string }>('select name from knex_migrations');
    const applied = new Set(rows.map((r) => r.name));
    return applied.size === files.size && [...files].every((f) => applied.has(f));
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
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
