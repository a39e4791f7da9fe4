import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createDb, type Db } from '../../shared/db/knex';
import { eventually, pidAlive } from './processes';
import { migrateLatest } from '../../shared/db/migrate';

/**
 * Test databases: one template, migrated once per set of migrations (its name carries their
 * hash), and one database per test file cloned from it, so files never see each other's rows.
 */

export const SERVER_URL = process.env.TEST_DATABASE_SERVER_URL || 'postgres://postgres@127.0.0.1:5432';

const MIGRATIONS = path.join(__dirname, '..', '..', 'shared', 'db', 'migrations');

function templateName(): string {
  const h = createHash('sha256');
  for (const f of readdirSync(MIGRATIONS).sort()) h.update(f).update(readFileSync(path.join(MIGRATIONS, f)));
  return `svc_tpl_${h.digest('hex').slice(0, 12)}`;
}

const admin = () => createDb(`${SERVER_URL}/postgres`, 1);

/** Creates the template if missing (under an advisory lock: several runs may start together). */
export async function prepareTemplate(): Promise<string> {
  const name = templateName();
  const db = admin();
  try {
    await db.raw('select pg_advisory_lock(734001)');
    try {
      // leftovers of crashed runs: per-file databases of dead processes. Templates of other
      // migration sets are kept: another checkout on this machine may be cloning them right now.
      const { rows } = await db.raw(`select datname from pg_database where datname like 'svc\\_t\\_%'`);
      for (const { datname } of rows as { datname: string }[]) {
        const pid = Number(/^svc_t_(\d+)_/.exec(datname)?.[1]);
        if (!pidAlive(pid)) await db.raw('drop database if exists ?? with (force)', [datname]);
      }
      const exists = await db.raw('select 1 from pg_database where datname = ?', [name]);
      if (exists.rows.length === 0) {
        await db.raw('create database ??', [`${name}_tmp`]).catch(() => undefined);
        const tpl = createDb(`${SERVER_URL}/${name}_tmp`, 1);
        try {
          await migrateLatest(tpl);
        } finally {
          await tpl.destroy();
        }
        await db.raw('alter database ?? rename to ??', [`${name}_tmp`, name]);
      }
    } finally {
      await db.raw('select pg_advisory_unlock(734001)');
    }
  } finally {
    await db.destroy();
  }
  return name;
}

export interface Database {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * The database `name` cloned from the migrated template; with `replace`, one of that name is
 * dropped first (a bench's named database, left by a run with --keep).
 */
export async function createDatabase(name: string, opts: { replace?: boolean } = {}): Promise<Database> {
  const template = await prepareTemplate();
  const db = admin();
  try {
    if (opts.replace) await db.raw('drop database if exists ?? with (force)', [name]);
    for (let attempt = 0; ; attempt++) {
      try {
        await db.raw('create database ?? template ??', [name, template]);
        break;
      } catch (err) {
        if (attempt > 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await db.destroy();
  }
  return {
    name,
    url: `${SERVER_URL}/${name}`,
    async drop() {
      const d = admin();
      try {
        await d.raw('drop database if exists ?? with (force)', [name]);
      } finally {
        await d.destroy();
      }
    },
  };
}

/** A database of this process's own (dropped by prepareTemplate once the process is gone, if not before). */
export function createTestDatabase(): Promise<Database> {
  return createDatabase(`svc_t_${process.pid}_${randomBytes(4).toString('hex')}`);
}

/** Resolves once `n` statements on this test database wait on a lock (e.g. one request waiting for another's key). */
export async function waitingOnLocks(db: Db, n: number, timeoutMs = 10_000): Promise<void> {
  await eventually(
    async () => {
      const { rows } = await db.raw(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      );
      return rows[0].n >= n;
    },
    timeoutMs,
    20,
  );
}
