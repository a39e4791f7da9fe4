import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { asPostgresUser, isRoot, portOpen, PROJECT_ROOT } from './local-services';

/**
 * `npm run cluster:up` / `npm run cluster:down`: the distributed topology on this machine, from
 * Debian's packages: a Redis Cluster of 3 masters and 3 replicas (`redis-server
 * --cluster-enabled yes`, `redis-cli --cluster create … --cluster-replicas 1`) and PgBouncer in
 * transaction pooling in front of the machine's Postgres. Ports from `--base-port p` (7100, or
 * CLUSTER_BASE_PORT): Redis p … p+5, PgBouncer p+6. Files under .data/cluster-<p>/. `up` prints
 * the settings that point the service at it; `down` stops what `up` started.
 */

export interface Topology {
  redisPorts: number[];
  pgbouncerPort: number;
  dir: string;
}

export function topologyAt(basePort: number): Topology {
  return {
    redisPorts: Array.from({ length: 6 }, (_, i) => basePort + i),
    pgbouncerPort: basePort + 6,
    dir: path.join(PROJECT_ROOT, '.data', `cluster-${basePort}`),
  };
}

/** The settings that point the service at the topology (its database name given). */
export function topologyEnv(t: Topology, database: string): Record<string, string> {
  return {
    REDIS_URL: `redis-cluster://${t.redisPorts.map((p) => `127.0.0.1:${p}`).join(',')}`,
    DATABASE_URL: `postgres://postgres@127.0.0.1:${t.pgbouncerPort}/${database}`,
    DB_PREPARED_STATEMENTS: 'false',
    QUEUE_PREFIX: 'svc',
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function need(bin: string, pkg: string): string {
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin']) if (existsSync(path.join(dir, bin))) return path.join(dir, bin);
  throw new Error(`${bin} is not installed: apt-get install -y ${pkg}`);
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
}

function clusterOk(port: number): boolean {
  const r = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' });
  return r.status === 0 && /cluster_state:ok/.test(r.stdout) && /cluster_slots_assigned:16384/.test(r.stdout);
}

/** Starts the Redis Cluster and PgBouncer of `t` (each only if its port is free), and waits until they answer. */
export async function clusterUp(t: Topology, postgres = { host: '127.0.0.1', port: 5432 }): Promise<void> {
  const redisServer = need('redis-server', 'redis-server');
  need('redis-cli', 'redis-tools');
  const pgbouncer = need('pgbouncer', 'pgbouncer');
  mkdirSync(t.dir, { recursive: true });
  for (const port of t.redisPorts) {
    if (await portOpen(port)) continue;
    execFileSync(redisServer, [
      '--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--dir', t.dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000',
      '--save', '', '--appendonly', 'no', '--pidfile', path.join(t.dir, `redis-${port}.pid`), '--logfile', path.join(t.dir, `redis-${port}.log`),
    ]);
  }
  for (const port of t.redisPorts) await waitFor(`redis-server on ${port}`, () => portOpen(port));
  if (!clusterOk(t.redisPorts[0])) {
    execFileSync('redis-cli', ['--cluster', 'create', ...t.redisPorts.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore' });
  }
  await waitFor('the Redis Cluster (every slot served)', () => t.redisPorts.every(clusterOk), 30_000);

  if (!(await portOpen(t.pgbouncerPort))) {
    // PgBouncer refuses to run as root: its own folder belongs to the postgres user then, as a private Postgres's does
    const dir = path.join(t.dir, 'pgbouncer');
    mkdirSync(dir, { recursive: true });
    const ini = path.join(dir, 'pgbouncer.ini');
    const files: Record<string, string> = {
      'userlist.txt': '"postgres" ""\n',
      'pgbouncer.ini': [
        '[databases]',
        `* = host=${postgres.host} port=${postgres.port}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${t.pgbouncerPort}`,
        `unix_socket_dir = ${dir}`,
        'auth_type = trust',
        `auth_file = ${path.join(dir, 'userlist.txt')}`,
        'pool_mode = transaction',
        'max_client_conn = 2000',
        'default_pool_size = 40',
        `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
        `logfile = ${path.join(dir, 'pgbouncer.log')}`,
        // node-postgres sends extra_float_digits at start; this PgBouncer (1.18) refuses unknown parameters
        'ignore_startup_parameters = extra_float_digits',
        '',
      ].join('\n'),
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    if (isRoot()) {
      const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString()));
      for (const p of [dir, ...Object.keys(files).map((name) => path.join(dir, name))]) chownSync(p, uid, gid);
    }
    asPostgresUser(pgbouncer, ['-d', ini]);
  }
  await waitFor(`PgBouncer on ${t.pgbouncerPort}`, () => portOpen(t.pgbouncerPort));
}

/** Stops what clusterUp started (by the pid files under its folder) and removes its files. */
export async function clusterDown(t: Topology): Promise<void> {
  for (const port of t.redisPorts) spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { stdio: 'ignore' });
  const pidFile = path.join(t.dir, 'pgbouncer', 'pgbouncer.pid');
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await waitFor('the topology to stop', async () => !(await Promise.all([...t.redisPorts, t.pgbouncerPort].map((p) => portOpen(p)))).some(Boolean), 10_000);
  rmSync(t.dir, { recursive: true, force: true });
}

async function main() {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'base-port': { type: 'string', default: process.env.CLUSTER_BASE_PORT || '7100' } } });
  const base = Number(values['base-port']);
  if (!Number.isInteger(base) || base < 1024 || base > 65_000) throw new Error('--base-port must be a port between 1024 and 65000');
  const t = topologyAt(base);
  if (positionals[0] === 'up') {
    await clusterUp(t);
    process.stdout.write(`cluster | Redis Cluster on ${t.redisPorts.join(', ')}, PgBouncer (transaction pooling) on ${t.pgbouncerPort}; run the service on it with:\n`);
    for (const [k, v] of Object.entries(topologyEnv(t, 'svc_payments'))) process.stdout.write(`export ${k}=${v}\n`);
  } else if (positionals[0] === 'down') {
    await clusterDown(t);
    process.stdout.write(`cluster | stopped the topology on ${t.redisPorts[0]}-${t.pgbouncerPort}\n`);
  } else {
    throw new Error('usage: cluster.ts up|down [--base-port p]');
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exit(1);
  });
}
