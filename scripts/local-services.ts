import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, chownSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * When DATABASE_URL / REDIS_URL are unset and nothing answers at the local defaults, starts
 * private Postgres and Redis servers from the machine's binaries under .data/; when the
 * binaries are missing, says exactly what to install.
 */

/** The project's folder, whether this runs as scripts/*.ts (tsx) or compiled under build/scripts (npm start). */
export const PROJECT_ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}build${path.sep}`) ? '../..' : '..');
const DATA = path.join(PROJECT_ROOT, '.data');
const PRIVATE_PG_PORT = 54329;
const PRIVATE_REDIS_PORT = 63799;

export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export function which(bin: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' });
  if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  // Debian keeps the server binaries off PATH
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    for (const v of readdirSync(root).sort().reverse()) {
      const p = path.join(root, v, 'bin', bin);
      if (existsSync(p)) return p;
    }
  }
  return undefined;
}

export const isRoot = () => process.getuid?.() === 0;

/** Runs a server that refuses root (initdb, pg_ctl, pgbouncer) as the postgres user when this runs as root. */
export function asPostgresUser(cmd: string, args: string[]): void {
  if (isRoot()) execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'inherit' });
  else execFileSync(cmd, args, { stdio: 'inherit' });
}

async function startPrivatePostgres(): Promise<string> {
  const initdb = which('initdb');
  const pgCtl = which('pg_ctl');
  if (!initdb || !pgCtl) {
    throw new Error(
      'No Postgres answers at 127.0.0.1:5432 and no server binaries were found. Install them (Debian: apt-get install postgresql) or set DATABASE_URL.',
    );
  }
  const dir = path.join(DATA, 'postgres');
  mkdirSync(DATA, { recursive: true });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    mkdirSync(dir, { recursive: true });
    if (isRoot()) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
      chownSync(DATA, uid, gid);
      chownSync(dir, uid, gid);
    }
    asPostgresUser(initdb, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  }
  if (!(await portOpen(PRIVATE_PG_PORT))) {
    asPostgresUser(pgCtl, [
      '-D',
      dir,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-o',
      `-p ${PRIVATE_PG_PORT} -k ${dir} -c listen_addresses=127.0.0.1`,
      'start',
    ]);
  }
  return `postgres://postgres@127.0.0.1:${PRIVATE_PG_PORT}/svc_payments`;
}

async function startPrivateRedis(): Promise<string> {
  const redis = which('redis-server');
  if (!redis) {
    throw new Error(
      'No Redis answers at 127.0.0.1:6379 and redis-server was not found. Install it (Debian: apt-get install redis-server) or set REDIS_URL.',
    );
  }
  mkdirSync(DATA, { recursive: true });
  if (!(await portOpen(PRIVATE_REDIS_PORT))) {
    execFileSync(redis, [
      '--port',
      String(PRIVATE_REDIS_PORT),
      '--bind',
      '127.0.0.1',
      '--daemonize',
      'yes',
      '--dir',
      DATA,
      '--save',
      '',
      '--appendonly',
      'no',
      '--logfile',
      path.join(DATA, 'redis.log'),
    ]);
    for (let i = 0; i < 50 && !(await portOpen(PRIVATE_REDIS_PORT)); i++) await new Promise((r) => setTimeout(r, 100));
  }
  return `redis://127.0.0.1:${PRIVATE_REDIS_PORT}`;
}

/** Fills DATABASE_URL and REDIS_URL in `env` when they are unset, starting private servers if needed. */
export async function ensureLocalServices(env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<void> {
  if (!env.DATABASE_URL && !(await portOpen(5432))) {
    env.DATABASE_URL = await startPrivatePostgres();
    say(`started a private Postgres under .data/ (${env.DATABASE_URL})`);
  }
  if (!env.REDIS_URL && !(await portOpen(6379))) {
    env.REDIS_URL = await startPrivateRedis();
    say(`started a private Redis under .data/ (${env.REDIS_URL})`);
  }
}
