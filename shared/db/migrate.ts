import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';

/** The migrations' folder: beside this file, or beside its source when this runs compiled (build/ leaves them out). */
const MIGRATIONS_DIR = path.join(__dirname.replace(`${path.sep}build${path.sep}`, path.sep), 'migrations');

/** Applies every migration not applied yet (TypeScript files, loaded through tsx). */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = await db.migrate.latest({ directory: MIGRATIONS_DIR, loadExtensions: ['.ts'] });
  return applied as string[];
}

/**
 * The migrations the database has not applied yet, by file name (knex_migrations, where knex
 * records each), read with one query and without loading a migration or TypeScript: `npm start`
 * runs the migrator (tsx) only when this names one. A database or table that does not exist yet
 * throws or names them all; either way the migrator then runs.
 */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.ts'));
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`select name from knex_migrations`).catch(() => ({ rows: [] }));
    const applied = new Set(rows.map((r) => r.name));
    return files.filter((f) => !applied.has(f));
  } finally {
    await client.end();
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
