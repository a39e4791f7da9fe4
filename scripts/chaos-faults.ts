import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import {
  pgbouncerPidFile,
  redisPidFile,
  startPgbouncer,
  startRedisNode,
  stopNode,
  type NodePorts,
  type Topology,
} from './cluster';
import { portOpen } from './local-services';
import { say } from './chaos-merchant';
import { sleep, waitFor } from './lib/processes';

/**
 * The faults of the topology drill other than the network cut (chaos-cutoff.ts): a kill -9 of a
 * whole node then its restart, a Redis master killed then restarted as a replica, PgBouncer
 * killed then restarted. Each resolves to what happened, in one line, and whether it went as a
 * real one would (the node ready again; a replica promoted and the old master back as its
 * replica; PgBouncer answering again).
 */

export interface FaultOutcome {
  ok: boolean;
  detail: string;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function pidIn(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function killed(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/**
 * kill -9 of every process of `node` (stopNode with SIGKILL: to its supervisor's process group);
 * every one of `processes()` must be gone within 10 s. `downMs` after the kill, `startAgain`
 * (which resolves once the node is ready).
 */
export async function killWholeNode(
  t: Topology,
  node: NodePorts,
  processes: () => number[],
  downMs: number,
  startAgain: () => Promise<void>,
): Promise<FaultOutcome> {
  const count = processes().length;
  const killedAt = Date.now();
  await stopNode(t, node, 'SIGKILL');
  // the supervisor is gone; a process killed with it may take a moment more to exit
  const allGone = await waitFor(
    `every process of ${node.name} to be gone`,
    () => processes().length === 0,
    10_000,
  ).then(
    () => true,
    () => false,
  );
  const gone = allGone
    ? `all gone within ${seconds(Date.now() - killedAt)}`
    : `${processes().length} still there after 10 s`;
  say(`kill -9 of ${node.name}: ${count} processes, ${gone}; started again ${downMs / 1000} s after the kill`);
  await sleep(Math.max(0, killedAt + downMs - Date.now()));
  const restartedAt = Date.now();
  await startAgain();
  const detail = `${count} processes killed, ${gone}; started again ${seconds(restartedAt - killedAt)} after the kill, ready ${seconds(Date.now() - restartedAt)} later`;
  say(`${node.name}: ${detail}`);
  return { ok: count > 1 && allGone, detail };
}

interface RedisRole {
  /** master, slave, or another role Redis may name */
  role: string;
  /** a master's replicas */
  replicaPorts: number[];
  /** a replica's master, and whether its link to it is up */
  masterPort?: number;
  linked?: boolean;
}

/** `redis-cli -p port role`, read; undefined when the node does not answer. */
function redisRole(port: number): RedisRole | undefined {
  const r = spawnSync('redis-cli', ['-p', String(port), 'role'], { encoding: 'utf8', timeout: 3000 });
  const lines = r.status === 0 ? r.stdout.trim().split('\n') : [];
  if (lines[0] === 'master') {
    // master, offset, then host, port, offset for each replica
    const replicaPorts: number[] = [];
    for (let i = 2; i + 1 < lines.length; i += 3) replicaPorts.push(Number(lines[i + 1]));
    return { role: 'master', replicaPorts };
  }
  if (lines[0] === 'slave')
    return { role: 'slave', replicaPorts: [], masterPort: Number(lines[2]), linked: lines[3] === 'connected' };
  return lines[0] ? { role: lines[0], replicaPorts: [] } : undefined;
}

const clusterStateOk = (port: number) =>
  /cluster_state:ok/.test(
    spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8', timeout: 3000 }).stdout ?? '',
  );

/**
 * A Redis master (one with a replica, chosen at random) killed with SIGKILL; its replica must
 * take its slots over. `downMs` later it is started again on its port with its cluster config
 * file, and must rejoin as a replica of the one promoted.
 */
export async function killRedisMaster(t: Topology, downMs: number): Promise<FaultOutcome> {
  const mastersWithReplica = () =>
    t.redisPorts
      .map((port) => ({ port, role: redisRole(port) }))
      .filter((n) => n.role?.role === 'master' && n.role.replicaPorts.length > 0);
  await waitFor('a Redis master with a replica', () => mastersWithReplica().length > 0, 30_000);
  const masters = mastersWithReplica();
  const { port, role } = masters[randomInt(masters.length)];
  const replica = role!.replicaPorts[0];
  if (!killed(pidIn(redisPidFile(t, port))))
    return { ok: false, detail: `the redis-server on ${port} could not be killed (pid file ${redisPidFile(t, port)})` };
  const killedAt = Date.now();
  say(`Redis master 127.0.0.1:${port} killed (kill -9); its replica is 127.0.0.1:${replica}`);
  let detail = `master 127.0.0.1:${port} killed`;
  try {
    await waitFor(
      `127.0.0.1:${replica} to take over from ${port}`,
      () => redisRole(replica)?.role === 'master' && clusterStateOk(replica),
      30_000,
    );
    detail += `; its replica 127.0.0.1:${replica} master after ${seconds(Date.now() - killedAt)}`;
    say(`Redis: 127.0.0.1:${replica} took over; ${port} started again in ${downMs / 1000} s`);
    await sleep(downMs);
    startRedisNode(t, port);
    const restartedAt = Date.now();
    await waitFor(
      `127.0.0.1:${port} to rejoin as a replica of ${replica}`,
      () => {
        const now = redisRole(port);
        return now?.role === 'slave' && now.masterPort === replica && now.linked === true;
      },
      30_000,
    );
    detail += `; ${port} started again ${seconds(restartedAt - killedAt)} after the kill, a replica of ${replica} (in sync) ${seconds(Date.now() - restartedAt)} later`;
    say(`Redis: ${detail}`);
    return { ok: true, detail };
  } catch (err) {
    return { ok: false, detail: `${detail}; ${(err as Error).message}` };
  }
}

/** PgBouncer killed with SIGKILL, and `downMs` later started again with the same ini. */
export async function restartPgbouncer(
  t: Topology,
  postgres: { host: string; port: number },
  downMs: number,
): Promise<FaultOutcome> {
  if (!killed(pidIn(pgbouncerPidFile(t))))
    return { ok: false, detail: `PgBouncer could not be killed (pid file ${pgbouncerPidFile(t)})` };
  const killedAt = Date.now();
  say(`PgBouncer killed (kill -9); started again in ${downMs / 1000} s`);
  try {
    await waitFor('PgBouncer to stop listening', async () => !(await portOpen(t.pgbouncerPort)), 10_000);
    await sleep(downMs);
    startPgbouncer(t, postgres);
    await waitFor(`PgBouncer on ${t.pgbouncerPort}`, () => portOpen(t.pgbouncerPort), 20_000);
    const detail = `killed (kill -9), started again with the same ini, answering ${seconds(Date.now() - killedAt)} after the kill`;
    say(`PgBouncer ${detail}`);
    return { ok: true, detail };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}
