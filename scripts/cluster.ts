import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { asPostgresUser, isRoot, portOpen, PROJECT_ROOT } from './local-services';
import { answers200, need, pidAlive, waitFor } from './lib/processes';
import { HSTS } from '../api/middleware/securityHeaders';
import { haDown, haTopologyAt, haUp } from './ha';

/**
 * `npm run cluster:up` / `npm run cluster:down`: the distributed topology on this machine, from
 * Debian's packages: a Redis Cluster of 3 masters and 3 replicas (`redis-server
 * --cluster-enabled yes`, `redis-cli --cluster create … --cluster-replicas 1`) and PgBouncer in
 * transaction pooling in front of the machine's Postgres. Ports from `--base-port p` (7100, or
 * CLUSTER_BASE_PORT): Redis p … p+5, PgBouncer p+6. Files under .data/cluster-<p>/. `up` prints
 * the settings that point the service at it; `down` stops what `up` started.
 *
 * `up --nodes 2` also runs the service as two nodes, as on two machines: each a whole `npm start`
 * (every Procfile line once, compiled) on ports of its own (node i: p+10i+10 web, +1 operator API,
 * +2 sandbox provider, +3 card vault, +4 card acquirer), named node-a, node-b in logs and
 * metrics, sharing the cluster and Postgres through PgBouncer, behind HAProxy on p+7
 * health-checking /health/ready. BASE_URL is HAProxy's, so callbacks, checkout pages and 3-D
 * Secure returns reach whichever node answers. HAProxy is the TLS edge (docs/durability.md#tls-13-at-the-edge):
 * HTTPS on p+7, TLS 1.3 only, on a certificate made here for local use
 * (edgeCertificate), HSTS on every answer; its plain-HTTP port p+8 (the internal one) serves
 * /health/* and redirects everything else to HTTPS. BASE_URL is https://, and the nodes'
 * processes trust the local certificate (NODE_EXTRA_CA_CERTS). The providers are outside the service: both nodes
 * use node-a's sandboxes (a provider keeps its own state), node-b's run unused.
 *
 * `up --db ha` puts PgBouncer in front of a highly available Postgres instead of the machine's
 * (scripts/ha.ts): etcd, two Postgres 15 nodes under Patroni with a synchronous standby, and an
 * HAProxy that follows the leader (ports from --pg-base 5433 and --etcd-base 5441). The service's
 * DATABASE_URL (PgBouncer's) stays the same when the leader changes. `down` stops it too.
 */

export interface Topology {
  redisPorts: number[];
  pgbouncerPort: number;
  /** HTTPS, TLS 1.3 only */
  haproxyPort: number;
  /** plain HTTP, the internal port: /health/* answered, anything else redirected to HTTPS */
  haproxyHttpPort: number;
  dir: string;
  /** the service's nodes, when it runs as several */
  nodes: NodePorts[];
}

export interface NodePorts {
  name: string;
  web: number;
  admin: number;
  sandbox: number;
  vault: number;
  acquirer: number;
}

export function topologyAt(basePort: number, nodeCount = 0): Topology {
  return {
    redisPorts: Array.from({ length: 6 }, (_, i) => basePort + i),
    pgbouncerPort: basePort + 6,
    haproxyPort: basePort + 7,
    haproxyHttpPort: basePort + 8,
    dir: path.join(PROJECT_ROOT, '.data', `cluster-${basePort}`),
    nodes: Array.from({ length: nodeCount }, (_, i) => {
      const b = basePort + 10 * (i + 1);
      return {
        name: `node-${String.fromCharCode(97 + i)}`,
        web: b,
        admin: b + 1,
        sandbox: b + 2,
        vault: b + 3,
        acquirer: b + 4,
      };
    }),
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

/** The edge's certificate for local use: `pem` (certificate and key, HAProxy's crt), `crt` (what clients trust). */
export interface EdgeCertificate {
  pem: string;
  crt: string;
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost (EC P-256, 1 year), made with openssl
 * the first time and kept under .data/tls/ for every topology of this checkout. In production
 * HAProxy's `crt` is the real certificate and its chain (docs/durability.md#tls-13-at-the-edge).
 */
export function edgeCertificate(dir = path.join(PROJECT_ROOT, '.data', 'tls')): EdgeCertificate {
  const cert = { pem: path.join(dir, 'edge.pem'), crt: path.join(dir, 'edge.crt') };
  if (existsSync(cert.pem) && existsSync(cert.crt)) return cert;
  mkdirSync(dir, { recursive: true });
  const tmp = `${dir}/.edge-${process.pid}`;
  execFileSync(
    need('openssl', 'openssl'),
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '365',
      '-subj',
      '/CN=svc-payments local edge',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      `${tmp}.key`,
      '-out',
      `${tmp}.crt`,
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(`${tmp}.pem`, readFileSync(`${tmp}.crt`, 'utf8') + readFileSync(`${tmp}.key`, 'utf8'), { mode: 0o600 });
  // whole files renamed into place: a topology starting meanwhile reads the old pair or the new
  renameSync(`${tmp}.pem`, cert.pem);
  renameSync(`${tmp}.crt`, cert.crt);
  rmSync(`${tmp}.key`, { force: true });
  return cert;
}

function clusterOk(port: number): boolean {
  const r = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' });
  return r.status === 0 && /cluster_state:ok/.test(r.stdout) && /cluster_slots_assigned:16384/.test(r.stdout);
}

/** The pid file of the redis-server on `port` (it stays after a kill -9; the next start writes it again). */
export const redisPidFile = (t: Topology, port: number) => path.join(t.dir, `redis-${port}.pid`);
export const pgbouncerPidFile = (t: Topology) => path.join(t.dir, 'pgbouncer', 'pgbouncer.pid');

/**
 * Starts the cluster's redis-server on `port` in the background. Started again after a crash, it
 * reads the same cluster config file (nodes-<port>.conf) and so rejoins the cluster as the node it
 * was (a replica of whichever took its slots over).
 */
export function startRedisNode(t: Topology, port: number): void {
  execFileSync(need('redis-server', 'redis-server'), [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--daemonize',
    'yes',
    '--dir',
    t.dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    '--cluster-node-timeout',
    '2000',
    '--save',
    '',
    '--appendonly',
    'no',
    '--pidfile',
    redisPidFile(t, port),
    '--logfile',
    path.join(t.dir, `redis-${port}.log`),
  ]);
}

/** Starts PgBouncer (transaction pooling, in front of `postgres`) in the background, writing its ini first (the same each time). */
export function startPgbouncer(t: Topology, postgres = { host: '127.0.0.1', port: 5432 }): void {
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
      `pidfile = ${pgbouncerPidFile(t)}`,
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      // node-postgres sends extra_float_digits at start; this PgBouncer (1.18) refuses unknown parameters
      'ignore_startup_parameters = extra_float_digits',
      // after a failed server login (Postgres down, a failover under way) it tries again after 1 s, not 15
      'server_login_retry = 1',
      '',
    ].join('\n'),
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  if (isRoot()) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString()));
    for (const p of [dir, ...Object.keys(files).map((name) => path.join(dir, name))]) chownSync(p, uid, gid);
  }
  asPostgresUser(need('pgbouncer', 'pgbouncer'), ['-d', ini]);
}

/** Starts the Redis Cluster and PgBouncer of `t` (each only if its port is free), and waits until they answer. */
export async function clusterUp(t: Topology, postgres = { host: '127.0.0.1', port: 5432 }): Promise<void> {
  need('redis-server', 'redis-server');
  need('redis-cli', 'redis-tools');
  need('pgbouncer', 'pgbouncer');
  mkdirSync(t.dir, { recursive: true });
  for (const port of t.redisPorts) if (!(await portOpen(port))) startRedisNode(t, port);
  for (const port of t.redisPorts) await waitFor(`redis-server on ${port}`, () => portOpen(port));
  if (!clusterOk(t.redisPorts[0])) {
    execFileSync(
      'redis-cli',
      ['--cluster', 'create', ...t.redisPorts.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
      { stdio: 'ignore' },
    );
  }
  await waitFor('the Redis Cluster (every slot served)', () => t.redisPorts.every(clusterOk), 30_000);

  if (!(await portOpen(t.pgbouncerPort))) startPgbouncer(t, postgres);
  await waitFor(`PgBouncer on ${t.pgbouncerPort}`, () => portOpen(t.pgbouncerPort));
}

/** The settings of one node of the service on the topology (database `database`). */
export function nodeEnv(t: Topology, node: NodePorts, database: string): Record<string, string> {
  const providers = t.nodes[0];
  return {
    ...topologyEnv(t, database),
    NODE_NAME: node.name,
    PORT: String(node.web),
    ADMIN_PORT: String(node.admin),
    BASE_URL: `https://127.0.0.1:${t.haproxyPort}`,
    // the processes that call BASE_URL (the sandboxes' callbacks and returns) trust the local edge certificate
    NODE_EXTRA_CA_CERTS: edgeCertificate().crt,
    SANDBOX_PROVIDER_PORT: String(node.sandbox),
    SANDBOX_PROVIDER_URL: `http://127.0.0.1:${providers.sandbox}`,
    CARD_VAULT_PORT: String(node.vault),
    CARD_VAULT_URL: `http://127.0.0.1:${providers.vault}`,
    CARD_PROVIDER_PORT: String(node.acquirer),
    CARD_PROVIDER_URL: `http://127.0.0.1:${providers.acquirer}`,
  };
}

/**
 * Starts one node (a whole compiled `npm start`) in the background; its output goes to
 * <dir>/<node>.log. With `cgroup` (a cgroup v2 folder), every process of the node runs in it from
 * its first instruction, every socket of the node with it (the chaos drill cuts a node off by it).
 */
export function startNode(
  t: Topology,
  node: NodePorts,
  env: Record<string, string>,
  options: { cgroup?: string } = {},
): number {
  const out = openSync(path.join(t.dir, `${node.name}.log`), 'a');
  const supervisor = [process.execPath, path.join(PROJECT_ROOT, 'build/scripts/start.js')];
  // sh joins the cgroup, then becomes the supervisor (exec: the same pid, the same process group)
  const [command, ...args] = options.cgroup
    ? ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', options.cgroup, ...supervisor]
    : supervisor;
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', out, out],
    detached: true,
  });
  child.unref();
  writeFileSync(path.join(t.dir, `${node.name}.pid`), String(child.pid));
  return child.pid!;
}

/** Stops a node started by startNode (SIGTERM to its supervisor, which stops every process of it). */
export async function stopNode(t: Topology, node: NodePorts, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const pidFile = path.join(t.dir, `${node.name}.pid`);
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    // the supervisor leads its own process group (detached): SIGKILL reaches every process of the node
    process.kill(signal === 'SIGKILL' ? -pid : pid, signal);
  } catch {
    // already gone
  }
  // the supervisor exits once every process of the node has (it kills what is left after 30 s)
  await waitFor(`${node.name} to stop`, () => !pidAlive(pid), 45_000);
  rmSync(pidFile, { force: true });
}

export { HSTS };

/**
 * HAProxy in front of the nodes' web ports, health-checking /health/ready: the TLS edge on
 * haproxyPort (TLS 1.3 only, HSTS), and the internal plain-HTTP port haproxyHttpPort (/health/*
 * served, anything else a 308 to the same path over HTTPS).
 */
export function startHaproxy(t: Topology): void {
  const haproxy = need('haproxy', 'haproxy');
  const cfg = path.join(t.dir, 'haproxy.cfg');
  const cert = edgeCertificate();
  writeFileSync(
    cfg,
    [
      'global',
      `  pidfile ${path.join(t.dir, 'haproxy.pid')}`,
      '  ssl-default-bind-options ssl-min-ver TLSv1.3',
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 60s',
      '  timeout server 60s',
      '  retries 2',
      '  option redispatch',
      // with no node ready, HAProxy answers as the service would: 503 service-unavailable, Retry-After, the error body
      `  http-error status 503 content-type application/json hdr Retry-After 5 hdr Cache-Control no-store hdr Strict-Transport-Security "${HSTS}" lf-string '{"error":{"code":"service-unavailable","message":"The service is temporarily unavailable","request_id":"req_%[uuid]"}}'`,
      'frontend web',
      `  bind 127.0.0.1:${t.haproxyPort} ssl crt ${cert.pem} ssl-min-ver TLSv1.3 alpn http/1.1`,
      '  http-request set-header X-Forwarded-Proto https',
      `  http-response set-header Strict-Transport-Security "${HSTS}"`,
      '  default_backend nodes',
      'frontend internal',
      `  bind 127.0.0.1:${t.haproxyHttpPort}`,
      `  http-request redirect prefix https://127.0.0.1:${t.haproxyPort} code 308 unless { path_beg /health/ }`,
      '  default_backend nodes',
      'backend nodes',
      '  option httpchk GET /health/ready',
      '  http-check expect status 200',
      '  default-server inter 1s fall 2 rise 2',
      ...t.nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.web} check`),
      '',
    ].join('\n'),
  );
  execFileSync(haproxy, ['-D', '-f', cfg]);
}

/** Stops the HAProxy startHaproxy started (by its pid file). */
export function stopHaproxy(t: Topology): void {
  const haproxyPid = path.join(t.dir, 'haproxy.pid');
  if (!existsSync(haproxyPid)) return;
  try {
    process.kill(Number(readFileSync(haproxyPid, 'utf8').trim()), 'SIGTERM');
  } catch {
    // already gone
  }
}

/** HAProxy answers and a node behind it is ready (through the internal port's /health/ready). */
export async function edgeReady(t: Topology): Promise<boolean> {
  return answers200(`http://127.0.0.1:${t.haproxyHttpPort}/health/ready`);
}

/** Stops what clusterUp started (by the pid files under its folder) and removes its files. */
export async function clusterDown(t: Topology): Promise<void> {
  for (const node of t.nodes) await stopNode(t, node);
  stopHaproxy(t);
  for (const port of t.redisPorts)
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { stdio: 'ignore' });
  const pidFile = pgbouncerPidFile(t);
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await waitFor(
    'the topology to stop',
    async () =>
      !(
        await Promise.all([...t.redisPorts, t.pgbouncerPort, t.haproxyPort, t.haproxyHttpPort].map((p) => portOpen(p)))
      ).some(Boolean),
    10_000,
  );
  rmSync(t.dir, { recursive: true, force: true });
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'base-port': { type: 'string', default: process.env.CLUSTER_BASE_PORT || '7100' },
      nodes: { type: 'string', default: '0' },
      database: { type: 'string', default: 'svc_cluster' },
      // single: PgBouncer in front of the machine's Postgres; ha: in front of the Patroni leader (scripts/ha.ts)
      db: { type: 'string', default: 'single' },
      'pg-base': { type: 'string', default: process.env.HA_PG_BASE || '5433' },
      'etcd-base': { type: 'string', default: process.env.HA_ETCD_BASE || '5441' },
    },
  });
  if (values.db !== 'single' && values.db !== 'ha') throw new Error('--db is single or ha');
  const h = haTopologyAt(Number(values['pg-base']), Number(values['etcd-base']));
  const base = Number(values['base-port']);
  if (!Number.isInteger(base) || base < 1024 || base > 65_000)
    throw new Error('--base-port must be a port between 1024 and 65000');
  const nodeCount = Number(values.nodes);
  if (!Number.isInteger(nodeCount) || nodeCount < 0 || nodeCount > 4) throw new Error('--nodes must be 0 to 4');
  // down finds the nodes by their pid files, whatever --nodes says
  const t = topologyAt(base, positionals[0] === 'down' ? 4 : nodeCount);
  if (positionals[0] === 'up') {
    let postgres = { host: '127.0.0.1', port: 5432 };
    if (values.db === 'ha') {
      const { leader, standby } = await haUp(h);
      postgres = { host: '127.0.0.1', port: h.leaderPort };
      process.stdout.write(
        `cluster | etcd on ${h.etcd.client}; Postgres 15 under Patroni: ${h.nodes.map((n) => `${n.name} on ${n.pg} (REST ${n.rest})`).join(', ')}; leader ${leader.name}, synchronous standby ${standby.name}; HAProxy to the leader on ${h.leaderPort}\n`,
      );
    }
    await clusterUp(t, postgres);
    process.stdout.write(
      `cluster | Redis Cluster on ${t.redisPorts.join(', ')}, PgBouncer (transaction pooling) on ${t.pgbouncerPort} in front of ${postgres.host}:${postgres.port}\n`,
    );
    if (t.nodes.length) {
      execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts/build.js'), '--if-stale'], {
        cwd: PROJECT_ROOT,
        stdio: 'inherit',
      });
      for (const node of t.nodes) {
        const pid = startNode(t, node, nodeEnv(t, node, values.database));
        // one after the other: the first migrates the database
        await waitFor(
          `${node.name} (web on ${node.web})`,
          () => answers200(`http://127.0.0.1:${node.web}/health/ready`),
          120_000,
        );
        process.stdout.write(
          `cluster | ${node.name} (pid ${pid}): web ${node.web}, operator API ${node.admin}; log ${path.join(t.dir, `${node.name}.log`)}\n`,
        );
      }
      startHaproxy(t);
      await waitFor(`HAProxy on ${t.haproxyHttpPort}`, () => edgeReady(t), 30_000);
      process.stdout.write(
        `cluster | HAProxy in front of ${t.nodes.map((n) => n.name).join(', ')}: the service is https://127.0.0.1:${t.haproxyPort} (TLS 1.3, certificate ${edgeCertificate().crt}); health on http://127.0.0.1:${t.haproxyHttpPort}/health/*\n`,
      );
    } else {
      process.stdout.write('cluster | run the service on it with:\n');
      for (const [k, v] of Object.entries(topologyEnv(t, 'svc_payments'))) process.stdout.write(`export ${k}=${v}\n`);
    }
  } else if (positionals[0] === 'down') {
    await clusterDown(t);
    process.stdout.write(`cluster | stopped the topology on ${t.redisPorts[0]}-${t.pgbouncerPort}\n`);
    // the HA Postgres of `up --db ha` (found by its folder, whatever --db says)
    if (existsSync(h.dir)) {
      await haDown(h);
      process.stdout.write(`cluster | stopped etcd, Patroni and both Postgres nodes of ${h.dir}\n`);
    }
  } else {
    throw new Error(
      'usage: cluster.ts up|down [--base-port p] [--nodes n] [--db single|ha] [--pg-base p] [--etcd-base p]',
    );
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exit(1);
  });
}
