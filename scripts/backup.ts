import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isRoot, portOpen } from './local-services';
import { pidAlive } from './lib/processes';
import { ARCHIVE_TIMEOUT_S, haTopologyAt, hasPgbackrest, PG_BIN, pgbackrest, type HaTopology } from './ha';

/**
 * Backups and point-in-time recovery with pgBackRest (docs/durability.md#backups-and-point-in-time-recovery), of the HA Postgres of
 * `npm run cluster:up -- --db ha` (scripts/ha.ts: both nodes archive their WAL into the
 * topology's repository, at least every archive_timeout = 60 s).
 *
 * - `npm run db:backup [-- --type full|incr|diff]`: a backup from the current primary (full by
 *   default; pgBackRest makes the first one full whatever is asked).
 * - `npm run db:restore -- --target "<timestamp>" [--port 5438]`: restores the latest backup
 *   before the target into a fresh data directory (.data/ha-<pg-base>/restored), replays the
 *   archived WAL up to the target, promotes, and starts it on --port. It refuses to overwrite a
 *   database that runs (its postmaster alive, or the port taken). The target must be followed by
 *   an archived transaction (Postgres stops at the first commit after it). `cluster:down` stops
 *   the restored database with the rest.
 *
 * `--pg-base` (5433, HA_PG_BASE) names the HA topology, as for cluster:up.
 */

export interface Restored {
  dir: string;
  port: number;
  url: (database: string) => string;
}

export const restoredDir = (h: HaTopology) => path.join(h.dir, 'restored');

function asPostgres(cmd: string, args: string[]): string {
  const ids = isRoot()
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
        gid: Number(execFileSync('id', ['-g', 'postgres']).toString()),
      }
    : undefined;
  return execFileSync(cmd, args, {
    encoding: 'utf8',
    ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
    env: { PATH: `${PG_BIN}:/usr/bin:/bin`, HOME: '/var/lib/postgresql', LANG: 'C.UTF-8' },
  });
}

/** A backup; returns its label and how long it took. */
export function backup(h: HaTopology, type: 'full' | 'incr' | 'diff' = 'full'): { label: string; seconds: number } {
  if (!hasPgbackrest()) throw new Error('pgbackrest is not installed: apt-get install -y pgbackrest');
  const started = Date.now();
  pgbackrest(h, [`--type=${type}`, 'backup']);
  const info = JSON.parse(pgbackrest(h, ['--output=json', 'info']));
  const backups = info[0]?.backup ?? [];
  return { label: backups[backups.length - 1]?.label ?? 'unknown', seconds: (Date.now() - started) / 1000 };
}

/** The postmaster of a data directory, if it runs. */
function running(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return pid && pidAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Restores to `target` (a timestamp Postgres reads, e.g. "2026-11-28 10:15:00.123+00") into a
 * fresh data directory and starts it on `port`. Refuses when a database runs there.
 */
export async function restore(h: HaTopology, target: string, port = 5438): Promise<Restored & { seconds: number }> {
  if (!hasPgbackrest()) throw new Error('pgbackrest is not installed: apt-get install -y pgbackrest');
  const dir = restoredDir(h);
  const pid = running(dir);
  if (pid)
    throw new Error(
      `a database runs in ${dir} (postmaster ${pid}): stop it first (pg_ctl -D ${dir} stop); db:restore never overwrites a running database`,
    );
  if (await portOpen(port)) throw new Error(`port ${port} is taken: a database may run there; choose another --port`);
  const started = Date.now();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (isRoot())
    chownSync(
      dir,
      Number(execFileSync('id', ['-u', 'postgres']).toString()),
      Number(execFileSync('id', ['-g', 'postgres']).toString()),
    );
  // the restored copy archives nothing into the cluster's repository (it is another timeline of another life)
  pgbackrest(h, [
    `--pg1-path=${dir}`,
    '--type=time',
    `--target=${target}`,
    '--target-action=promote',
    '--archive-mode=off',
    'restore',
  ]);
  // the backup's configuration is Patroni's: a standalone server with its own port and socket,
  // and no synchronous standby to wait for
  writeFileSync(
    path.join(dir, 'postgresql.restored.conf'),
    [
      `port = ${port}`,
      `unix_socket_directories = '${dir}'`,
      "listen_addresses = '127.0.0.1'",
      "synchronous_standby_names = ''",
      "cluster_name = 'restored'",
      "hba_file = '" + path.join(dir, 'pg_hba.conf') + "'",
      '',
    ].join('\n'),
  );
  const conf = path.join(dir, 'postgresql.conf');
  writeFileSync(conf, `${existsSync(conf) ? readFileSync(conf, 'utf8') : ''}\ninclude 'postgresql.restored.conf'\n`);
  if (!existsSync(path.join(dir, 'pg_hba.conf')))
    writeFileSync(path.join(dir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\n');
  if (isRoot()) execFileSync('/bin/chown', ['-R', 'postgres:postgres', dir]);
  try {
    asPostgres(path.join(PG_BIN, 'pg_ctl'), [
      '-D',
      dir,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '600',
      'start',
    ]);
  } catch {
    const fatal =
      readFileSync(path.join(dir, 'server.log'), 'utf8')
        .split('\n')
        .filter((l) => /FATAL/.test(l))
        .pop() ?? 'see the log';
    const hint = /before configured recovery target/.test(fatal)
      ? ' (no transaction archived after the target yet: pick an earlier target, or wait for the next archive, at most archive_timeout)'
      : '';
    throw new Error(`the restored database did not start: ${fatal}${hint}; log ${path.join(dir, 'server.log')}`);
  }
  // recovery replays up to the target, then promotes: wait until it takes writes
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  for (let i = 0; i < 600; i++) {
    const out = asPostgres(path.join(PG_BIN, 'psql'), [
      '-h',
      dir,
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-Atc',
      'select pg_is_in_recovery()',
    ]).trim();
    if (out === 'f') return { dir, port, url, seconds: (Date.now() - started) / 1000 };
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the restored database did not promote; see ${path.join(dir, 'server.log')}`);
}

/** Stops the restored database (fast) and removes its directory. */
export function dropRestored(h: HaTopology): void {
  const dir = restoredDir(h);
  if (running(dir)) asPostgres(path.join(PG_BIN, 'pg_ctl'), ['-D', dir, '-m', 'fast', '-w', 'stop']);
  rmSync(dir, { recursive: true, force: true });
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'pg-base': { type: 'string', default: process.env.HA_PG_BASE || '5433' },
      'etcd-base': { type: 'string', default: process.env.HA_ETCD_BASE || '5441' },
      type: { type: 'string', default: 'full' },
      target: { type: 'string' },
      port: { type: 'string', default: '5438' },
    },
  });
  const h = haTopologyAt(Number(values['pg-base']), Number(values['etcd-base']));
  if (!existsSync(h.dir)) throw new Error(`no HA Postgres at ${h.dir}: npm run cluster:up -- --db ha`);
  if (positionals[0] === 'backup') {
    if (!['full', 'incr', 'diff'].includes(values.type)) throw new Error('--type is full, incr or diff');
    const b = backup(h, values.type as 'full');
    process.stdout.write(
      `db:backup | ${values.type} backup ${b.label} in ${b.seconds.toFixed(1)} s; WAL archived at least every ${ARCHIVE_TIMEOUT_S} s\n`,
    );
    process.stdout.write(pgbackrest(h, ['info']));
  } else if (positionals[0] === 'restore') {
    if (!values.target) throw new Error('usage: npm run db:restore -- --target "<timestamp>" [--port 5438]');
    const r = await restore(h, values.target, Number(values.port));
    process.stdout.write(
      `db:restore | restored to ${values.target} in ${r.seconds.toFixed(1)} s: running in ${r.dir} on port ${r.port} (${r.url('<database>')})\n`,
    );
  } else {
    throw new Error('usage: backup.ts backup [--type full|incr|diff] | restore --target "<timestamp>" [--port p]');
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}
