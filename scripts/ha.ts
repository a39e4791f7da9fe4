import { execFileSync, spawn } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { isRoot, portOpen, PROJECT_ROOT } from './local-services';
import { answers200, need as needIn, pidAlive, waitFor as waitForEvery } from './lib/processes';

/**
 * Postgres with a synchronous standby and automatic failover (docs/durability.md#highly-available-postgres), from Debian's
 * packages: one etcd (`etcd-server`, the DCS), two Postgres 15 nodes under Patroni (`patroni`)
 * with `synchronous_mode: true` (a commit is acknowledged once the standby has it), and an
 * HAProxy in TCP mode that sends connections to whichever node answers Patroni's REST
 * `GET /primary` with 200. PgBouncer (scripts/cluster.ts) goes in front of that HAProxy, so the
 * service's DATABASE_URL never changes when the leader does.
 *
 * Ports from `pgBase` (5433, or HA_PG_BASE): Postgres pgBase, pgBase+1; Patroni REST pgBase+2,
 * pgBase+3; the leader through HAProxy pgBase+4. etcd from `etcdBase` (5441, or HA_ETCD_BASE):
 * client etcdBase, peer etcdBase+1. Files under .data/ha-<pgBase>/, the nodes' owned by the
 * postgres user (Postgres refuses to run as root): Patroni and Postgres run as that user.
 */

export interface HaNode {
  name: string;
  pg: number;
  rest: number;
  dir: string;
  data: string;
}

export interface HaTopology {
  scope: string;
  dir: string;
  etcd: { client: number; peer: number };
  nodes: HaNode[];
  /** the leader's Postgres, through HAProxy */
  leaderPort: number;
}

export const PG_BIN = '/usr/lib/postgresql/15/bin';
/** Patroni's timing: the leader key lives `ttl` s; a node loops every `loop_wait` s */
const TTL_S = 10;
const LOOP_WAIT_S = 2;

export function haTopologyAt(
  pgBase = Number(process.env.HA_PG_BASE || 5433),
  etcdBase = Number(process.env.HA_ETCD_BASE || 5441),
): HaTopology {
  const dir = path.join(PROJECT_ROOT, '.data', `ha-${pgBase}`);
  return {
    scope: `svc-ha-${pgBase}`,
    dir,
    etcd: { client: etcdBase, peer: etcdBase + 1 },
    nodes: [0, 1].map((i) => ({
      name: `pg${i}`,
      pg: pgBase + i,
      rest: pgBase + 2 + i,
      dir: path.join(dir, `pg${i}`),
      data: path.join(dir, `pg${i}`, 'data'),
    })),
    leaderPort: pgBase + 4,
  };
}

/** A machine binary, also among Postgres 15's (lib/processes need). */
const need = (bin: string, pkg: string) => needIn(bin, pkg, [PG_BIN]);

function postgresIds(): { uid: number; gid: number } | undefined {
  if (!isRoot()) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString()),
  };
}

function chownTree(p: string, ids: { uid: number; gid: number }): void {
  chownSync(p, ids.uid, ids.gid);
  if (statSync(p).isDirectory()) for (const f of readdirSync(p)) chownTree(path.join(p, f), ids);
}

/** Starts `cmd` detached (its own process group), output to `log`, pid in `pidFile`; as the postgres user with `asPostgres`. */
function daemon(cmd: string, args: string[], log: string, pidFile: string, asPostgres = false): number {
  const out = openSync(log, 'a');
  const ids = asPostgres ? postgresIds() : undefined;
  const child = spawn(cmd, args, {
    stdio: ['ignore', out, out],
    detached: true,
    ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
    env: {
      PATH: `${PG_BIN}:/usr/sbin:/usr/bin:/bin`,
      HOME: asPostgres ? '/var/lib/postgresql' : (process.env.HOME ?? '/root'),
      LANG: 'C.UTF-8',
    },
  });
  child.unref();
  writeFileSync(pidFile, String(child.pid));
  return child.pid!;
}

/** lib/processes waitFor, polling every 200 ms, 30 s unless told */
const waitFor = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000) =>
  waitForEvery(what, check, timeoutMs, 200);

/** pgBackRest (docs/durability.md#backups-and-point-in-time-recovery): its stanza, and its files under the topology's folder (the repository in repo/). */
export const STANZA = 'svc';
export const ARCHIVE_TIMEOUT_S = 60;
export const pgbackrestDir = (h: HaTopology) => path.join(h.dir, 'pgbackrest');
export const pgbackrestConf = (h: HaTopology) => path.join(pgbackrestDir(h), 'pgbackrest.conf');
export const hasPgbackrest = () => existsSync('/usr/bin/pgbackrest');

/** Both nodes as pg1 and pg2: pgBackRest backs up from whichever is the primary. */
function pgbackrestConfig(h: HaTopology): string {
  const d = pgbackrestDir(h);
  return [
    '[global]',
    `repo1-path=${path.join(d, 'repo')}`,
    'repo1-retention-full=2',
    `log-path=${path.join(d, 'log')}`,
    `lock-path=${path.join(d, 'lock')}`,
    `spool-path=${path.join(d, 'spool')}`,
    'log-level-console=warn',
    'log-level-file=info',
    'start-fast=y',
    'compress-level=3',
    '',
    `[${STANZA}]`,
    ...h.nodes.flatMap((n, i) => [
      `pg${i + 1}-path=${n.data}`,
      `pg${i + 1}-port=${n.pg}`,
      `pg${i + 1}-socket-path=${n.dir}`,
      `pg${i + 1}-user=postgres`,
    ]),
    '',
  ].join('\n');
}

/** The node's WAL archiving into the pgBackRest repository, every ARCHIVE_TIMEOUT_S at least (when pgBackRest is installed). */
function archiving(h: HaTopology, n: HaNode): string {
  if (!hasPgbackrest()) return '';
  // Postgres runs archive_command in the data directory: %p is relative to this node's, hence its pg1-path
  return `    archive_mode: 'on'
    archive_timeout: ${ARCHIVE_TIMEOUT_S}
    archive_command: 'pgbackrest --config=${pgbackrestConf(h)} --stanza=${STANZA} --pg1-path=${n.data} archive-push %p'
`;
}

/** Runs pgbackrest as the postgres user (it runs as the data directories' owner); returns its output. */
export function pgbackrest(h: HaTopology, args: string[]): string {
  const ids = postgresIds();
  return execFileSync('/usr/bin/pgbackrest', [`--config=${pgbackrestConf(h)}`, `--stanza=${STANZA}`, ...args], {
    encoding: 'utf8',
    ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
    env: { PATH: `${PG_BIN}:/usr/bin:/bin`, HOME: '/var/lib/postgresql' },
  });
}

function patroniConfig(h: HaTopology, n: HaNode): string {
  return `scope: ${h.scope}
name: ${n.name}
restapi:
  listen: 127.0.0.1:${n.rest}
  connect_address: 127.0.0.1:${n.rest}
etcd3:
  hosts: 127.0.0.1:${h.etcd.client}
bootstrap:
  dcs:
    ttl: ${TTL_S}
    loop_wait: ${LOOP_WAIT_S}
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    # a crashed primary is not waited for: the synchronous standby takes over at once
    primary_start_timeout: 0
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
        wal_keep_size: 256MB
  initdb:
    - encoding: UTF8
    - data-checksums
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${n.pg}
  connect_address: 127.0.0.1:${n.pg}
  data_dir: ${n.data}
  bin_dir: ${PG_BIN}
  pgpass: ${path.join(n.dir, 'pgpass')}
  authentication:
    replication:
      username: replicator
      password: replicator
    superuser:
      username: postgres
      password: postgres
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: ${n.dir}
${archiving(h, n)}tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
`;
}

const etcdPidFile = (h: HaTopology) => path.join(h.dir, 'etcd.pid');
const patroniPidFile = (n: HaNode) => path.join(n.dir, 'patroni.pid');
const haproxyPidFile = (h: HaTopology) => path.join(h.dir, 'haproxy-pg.pid');
export const patroniLog = (n: HaNode) => path.join(n.dir, 'patroni.log');

/** Starts the Patroni of `n` (its Postgres with it), unless it runs. */
export function startPatroni(h: HaTopology, n: HaNode): void {
  const pidFile = patroniPidFile(n);
  if (existsSync(pidFile) && pidAlive(Number(readFileSync(pidFile, 'utf8')))) return;
  daemon(need('patroni', 'patroni'), [path.join(n.dir, 'patroni.yml')], patroniLog(n), pidFile, true);
}

/** Patroni's view of a node: its role and state, or undefined when its REST API does not answer. */
export async function patroniStatus(
  n: HaNode,
): Promise<{ role: string; state: string; timeline?: number } | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${n.rest}/patroni`, { signal: AbortSignal.timeout(1000) });
    return (await res.json()) as { role: string; state: string; timeline?: number };
  } catch {
    return undefined;
  }
}

/** The node answering GET /primary with 200 (the leader, running), if any. */
export async function leaderOf(h: HaTopology): Promise<HaNode | undefined> {
  for (const n of h.nodes) {
    const res = await fetch(`http://127.0.0.1:${n.rest}/primary`, { signal: AbortSignal.timeout(1000) }).catch(
      () => null,
    );
    if (res?.status === 200) return n;
  }
  return undefined;
}

/** The node streaming synchronously from the leader (Patroni's /sync answers 200), if any. */
export async function syncStandbyOf(h: HaTopology): Promise<HaNode | undefined> {
  for (const n of h.nodes) {
    const res = await fetch(`http://127.0.0.1:${n.rest}/sync`, { signal: AbortSignal.timeout(1000) }).catch(() => null);
    if (res?.status === 200) return n;
  }
  return undefined;
}

/** Waits until there is a leader and a synchronous standby streaming from it; returns them. */
export async function waitHealthy(h: HaTopology, timeoutMs = 120_000): Promise<{ leader: HaNode; standby: HaNode }> {
  let pair: { leader: HaNode; standby: HaNode } | undefined;
  await waitFor(
    'a Patroni leader with a synchronous standby',
    async () => {
      const leader = await leaderOf(h);
      const standby = await syncStandbyOf(h);
      if (leader && standby && leader !== standby) pair = { leader, standby };
      return !!pair;
    },
    timeoutMs,
  );
  return pair!;
}

/** HAProxy (TCP) on leaderPort in front of both nodes, health-checking Patroni's GET /primary. */
function startLeaderProxy(h: HaTopology): void {
  const cfg = path.join(h.dir, 'haproxy-pg.cfg');
  writeFileSync(
    cfg,
    [
      'global',
      `  pidfile ${haproxyPidFile(h)}`,
      'defaults',
      '  mode tcp',
      '  timeout connect 2s',
      '  timeout client 30m',
      '  timeout server 30m',
      '  timeout check 1s',
      'listen leader',
      `  bind 127.0.0.1:${h.leaderPort}`,
      '  option httpchk GET /primary',
      '  http-check expect status 200',
      // a node that stops being the leader loses its sessions at once: nothing writes to a demoted node
      '  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions',
      ...h.nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pg} check port ${n.rest}`),
      '',
    ].join('\n'),
  );
  execFileSync(need('haproxy', 'haproxy'), ['-D', '-f', cfg]);
}

/** Starts etcd, both Patroni nodes and the leader's HAProxy (each unless it runs), and waits for a leader with a synchronous standby. */
export async function haUp(h: HaTopology): Promise<{ leader: HaNode; standby: HaNode }> {
  need('etcd', 'etcd-server');
  need('patroni', 'patroni');
  need('postgres', 'postgresql-15');
  mkdirSync(h.dir, { recursive: true });
  if (!(await portOpen(h.etcd.client))) {
    const url = (p: number) => `http://127.0.0.1:${p}`;
    daemon(
      need('etcd', 'etcd-server'),
      [
        '--name',
        h.scope,
        '--data-dir',
        path.join(h.dir, 'etcd'),
        '--listen-client-urls',
        url(h.etcd.client),
        '--advertise-client-urls',
        url(h.etcd.client),
        '--listen-peer-urls',
        url(h.etcd.peer),
        '--initial-advertise-peer-urls',
        url(h.etcd.peer),
        '--initial-cluster',
        `${h.scope}=${url(h.etcd.peer)}`,
        '--initial-cluster-state',
        'new',
      ],
      path.join(h.dir, 'etcd.log'),
      etcdPidFile(h),
    );
  }
  await waitFor(`etcd on ${h.etcd.client}`, () => answers200(`http://127.0.0.1:${h.etcd.client}/health`));
  const ids = postgresIds();
  for (const n of h.nodes) {
    mkdirSync(n.dir, { recursive: true });
    writeFileSync(path.join(n.dir, 'patroni.yml'), patroniConfig(h, n));
    if (ids) chownTree(n.dir, ids);
  }
  if (hasPgbackrest()) {
    for (const sub of ['repo', 'log', 'lock', 'spool'])
      mkdirSync(path.join(pgbackrestDir(h), sub), { recursive: true });
    writeFileSync(pgbackrestConf(h), pgbackrestConfig(h));
    if (ids) chownTree(pgbackrestDir(h), ids);
  }
  // the first node bootstraps the cluster alone; the second then clones it
  startPatroni(h, h.nodes[0]);
  await waitFor(`${h.nodes[0].name} leading`, async () => !!(await leaderOf(h)), 90_000);
  startPatroni(h, h.nodes[1]);
  if (!(await portOpen(h.leaderPort))) startLeaderProxy(h);
  const pair = await waitHealthy(h);
  await waitFor(`the leader through HAProxy on ${h.leaderPort}`, () => portOpen(h.leaderPort));
  // the stanza once there is a primary (again harmless: it checks the one there)
  if (hasPgbackrest()) pgbackrest(h, ['stanza-create']);
  return pair;
}

/** The pid of a node's postmaster (from postmaster.pid), if it runs. */
export function postmasterPid(n: HaNode): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(n.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return pid && pidAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function killFromPidFile(pidFile: string, signal: NodeJS.Signals = 'SIGTERM'): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  try {
    process.kill(pid, signal);
    return pid;
  } catch {
    return undefined;
  }
}

/** A planned move of the leader to the standby (patronictl switchover); resolves once Patroni accepted it. */
export async function switchover(h: HaTopology, from: HaNode, to: HaNode): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${from.rest}/switchover`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ leader: from.name, candidate: to.name }),
    signal: AbortSignal.timeout(60_000),
  });
  if (res.status !== 200) throw new Error(`switchover refused (${res.status}): ${await res.text()}`);
}

/** Stops what haUp started: HAProxy, both Patronis (each stops its Postgres), etcd; removes the files. */
export async function haDown(h: HaTopology): Promise<void> {
  killFromPidFile(haproxyPidFile(h));
  const pids = h.nodes.map((n) => killFromPidFile(patroniPidFile(n))).filter((p): p is number => !!p);
  await waitFor('Patroni to stop', () => pids.every((p) => !pidAlive(p)), 60_000).catch(() =>
    pids.forEach((p) => {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }),
  );
  for (const n of h.nodes) {
    const pm = postmasterPid(n);
    if (pm) process.kill(pm, 'SIGKILL');
  }
  // a database db:restore started in the topology's folder (fast shutdown)
  const restored = postmasterPid({ data: path.join(h.dir, 'restored') } as HaNode);
  if (restored) {
    process.kill(restored, 'SIGINT');
    await waitFor('the restored database to stop', () => !pidAlive(restored), 30_000).catch(() =>
      process.kill(restored, 'SIGKILL'),
    );
  }
  const etcd = killFromPidFile(etcdPidFile(h));
  if (etcd) await waitFor('etcd to stop', () => !pidAlive(etcd), 20_000).catch(() => undefined);
  await waitFor(
    'the HA ports to close',
    async () =>
      !(
        await Promise.all(
          [h.leaderPort, h.etcd.client, ...h.nodes.flatMap((n) => [n.pg, n.rest])].map((p) => portOpen(p)),
        )
      ).some(Boolean),
    20_000,
  );
  rmSync(h.dir, { recursive: true, force: true });
}
