import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { ServiceClient } from '../shared/client/signing';
import { haDown, haUp, patroniLog, type HaTopology } from './ha';
import { leaderChangesTable, loseLeaderWithDisk, plannedSwitchover, type LeaderChange } from './chaos-ha';
import {
  clusterDown,
  clusterUp,
  edgeReady,
  nodeEnv,
  startHaproxy,
  startNode,
  stopNode,
  topologyAt,
  type NodePorts,
  type Topology,
} from './cluster';
import { PROJECT_ROOT, portOpen } from './local-services';
import { NodeCutoffs, processesIn } from './chaos-cutoff';
import { killRedisMaster, killWholeNode, restartPgbouncer, type FaultOutcome } from './chaos-faults';
import { scanLogsForLeaks } from './chaos-leaks';
import { DRILL_SERVICE_ENV, sandboxProvider, say, startMerchantSide, type DrillMerchant } from './chaos-merchant';
import { probeUntil, type PartitionProbes } from './chaos-partition';
import { answers200, sleep, waitFor } from './lib/processes';
import { takenPorts } from './chaos-ports';
import { SignedPoster } from './chaos-replays';
import {
  assessOutcome,
  boundedAnswersCheck,
  logLeaksCheck,
  printReport,
  waitUntilFinal,
  type Check,
} from './chaos-report';

/**
 * `npm run chaos -- --topology cluster --duration 180 --base-port 7400`: the fault drill across
 * the distributed topology of scripts/cluster.ts. It brings the topology up on --base-port p (a
 * Redis Cluster of 3 masters and 3 replicas, PgBouncer in transaction pooling in front of the
 * Postgres of --database-url, and two nodes, node-a and node-b, each a whole `npm start`, behind
 * HAProxy; a Redis Cluster or PgBouncer already up on those ports is used as it is, nodes already
 * running there are stopped and replaced by the drill's), sends the single-machine drill's load
 * (chaos-merchant.ts: payments, refunds, payouts, signed replays) through HAProxy, and breaks
 * things, one fault after the other, each at its share of --duration (or once the one before is
 * over; the load goes on until both the duration and the last fault are over):
 *   10 %  kill -9 of node-b, every process of it (its supervisor leads its own process group),
 *         and 10 s later node-b started again (ready before the next fault);
 *   35 %  a Redis master with a replica killed (kill -9 of its redis-server): the replica must
 *         take over; 20 s later it is started again on its port with its cluster config file and
 *         must rejoin as a replica of the promoted one;
 *   55 %  PgBouncer killed (kill -9) and started again 2 s later with the same ini;
 *   70 %  node-a cut off from Redis and Postgres for 20 s: a network cut, not a freeze. Every
 *         process of a node runs in a cgroup of its own, and iptables drops every packet between
 *         node-a's sockets and the Redis, PgBouncer and Postgres ports (chaos-cutoff.ts); the
 *         node's processes go on running and answering. Meanwhile requests are timed, through
 *         HAProxy and straight at node-a (chaos-partition.ts).
 * node-b is the node killed, node-a the one cut off: node-a runs the sandbox providers that both
 * nodes use (cluster.ts nodeEnv). They stand for the providers, outside the service: a kill -9 of
 * node-a would wipe their memory of what they did, which the provider check compares with. The
 * cut leaves them running (they use neither Redis nor Postgres).
 *
 * Then it waits for every object to be final and every event delivered, stops the nodes and
 * prints the single-machine drill's tables (chaos-report.ts): objects lost and doubled; webhook
 * events, ledger, provider (node-a's sandbox), signed replays; `node-a cut off`, every timed
 * request answered within 7 s; one row per other fault, whether it went as a real one would;
 * log leaks, over both nodes' logs. Whatever happens, it then stops the topology (clusterDown)
 * and removes its iptables chain and cgroups. Exit code 1 on anything lost or doubled or any
 * failed check; 2 when the drill cannot run (iptables or cgroup v2 missing, a port taken, the
 * topology not starting).
 *
 * Ports from p: the topology's (Redis p…p+5, PgBouncer p+6, HAProxy p+7, node-a p+10…p+14,
 * node-b p+20…p+24) and the webhook receiver p+100. Its files are under .data/cluster-<p>/ while
 * it runs; the nodes' logs are kept as $TMPDIR/chaos-topology-<p>-<node>.log.
 */

export interface TopologyDrillOptions {
  durationS: number;
  base: number;
  /** the Postgres behind PgBouncer and the database of the drill (the drill itself reads it directly) */
  databaseUrl: string;
  rate: number;
  drainS: number;
  /** with `ha`, PgBouncer is in front of the Patroni leader of `ha` (scripts/ha.ts), and the faults are the database's (chaos-ha.ts) */
  ha?: HaTopology;
}

const APP_NAME = 'chaos-drill';
const CUT_S = 20;
const NODE_DOWN_MS = 10_000;
const REDIS_MASTER_DOWN_MS = 20_000;
const PGBOUNCER_DOWN_MS = 2000;
/** the webhook receiver's port is --base-port + this */
const RECEIVER_OFFSET = 100;

/** The settings of a node of the drill: the topology's, and the drill's operator token, provider key, rate limit and log level. */
function drillNodeEnv(t: Topology, node: NodePorts, database: string): Record<string, string> {
  return {
    ...nodeEnv(t, node, database),
    NODE_ENV: 'development',
    // queue keys of the drill's own, whatever a Redis Cluster already up on these ports holds
    QUEUE_PREFIX: 'chaos',
    ...DRILL_SERVICE_ENV,
  };
}

const nodeLog = (t: Topology, node: NodePorts) => path.join(t.dir, `${node.name}.log`);
const keptLog = (t: Topology, node: NodePorts) =>
  path.join(os.tmpdir(), `chaos-topology-${t.redisPorts[0]}-${node.name}.log`);
const answersReady = (port: number) => answers200(`http://127.0.0.1:${port}/health/ready`);

export async function runTopologyDrill(o: TopologyDrillOptions): Promise<number> {
  const t = topologyAt(o.base, 2);
  // the HA drill cuts no node off: it needs neither iptables nor the nodes' cgroups
  let cutoffs: NodeCutoffs | undefined;
  try {
    if (!o.ha) cutoffs = NodeCutoffs.prepare(o.base);
  } catch (err) {
    return cannotRun(`a node cannot be cut off on this machine: ${(err as Error).message}`);
  }
  const refusal = await takeOverPorts(t, o.base + RECEIVER_OFFSET).catch((err: Error) => err.message);
  if (refusal) {
    cutoffs?.release();
    return cannotRun(refusal);
  }
  const cleanUp = async () => {
    for (const node of t.nodes) if (existsSync(nodeLog(t, node))) copyFileSync(nodeLog(t, node), keptLog(t, node));
    await clusterDown(t).catch((err) => process.stderr.write(`chaos: cluster:down failed: ${err.message}\n`));
    if (o.ha)
      await haDown(o.ha).catch((err) =>
        process.stderr.write(`chaos: stopping the HA Postgres failed: ${err.message}\n`),
      );
    cutoffs?.release();
  };
  const interrupted = () => void cleanUp().then(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    return await drill(t, o, cutoffs);
  } catch (err) {
    return cannotRun((err as Error).stack ?? (err as Error).message);
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanUp();
    say(`topology on ${o.base} stopped; the nodes' logs are kept: ${t.nodes.map((n) => keptLog(t, n)).join(', ')}`);
  }
}

/**
 * Makes way for the drill's nodes and webhook receiver: nodes of a topology already up on these
 * ports (npm run cluster:up) are stopped; why the drill cannot run when a port is still taken.
 */
async function takeOverPorts(t: Topology, receiverPort: number): Promise<string | undefined> {
  for (const node of t.nodes) await stopNode(t, node);
  const ports: Record<string, number> = { 'webhook receiver': receiverPort };
  for (const { name, ...ofNode } of t.nodes)
    for (const [role, port] of Object.entries(ofNode)) ports[`${name} ${role}`] = port;
  const taken = await takenPorts(ports);
  return taken.length
    ? `${taken.map(({ role, port }) => `port ${port} (${role})`).join(', ')} taken: choose another --base-port`
    : undefined;
}

function cannotRun(reason: string): number {
  process.stderr.write(`chaos failed: ${reason}\n`);
  return 2;
}

async function drill(t: Topology, o: TopologyDrillOptions, cutoffs: NodeCutoffs | undefined): Promise<number> {
  const [nodeA] = t.nodes;
  const dbUrl = new URL(o.databaseUrl);
  const database = dbUrl.pathname.slice(1);
  const postgres = { host: dbUrl.hostname, port: Number(dbUrl.port || 5432) };
  if (o.ha) {
    const { leader, standby } = await haUp(o.ha);
    say(
      `HA Postgres: etcd ${o.ha.etcd.client}, Patroni ${o.ha.nodes.map((n) => `${n.name} (Postgres ${n.pg}, REST ${n.rest})`).join(', ')}: leader ${leader.name}, synchronous standby ${standby.name}; HAProxy to the leader on ${o.ha.leaderPort}`,
    );
  }
  const serviceUrl = `https://127.0.0.1:${t.haproxyPort}`;
  /** Starts `node` in its cgroup and waits until it is ready. */
  const startDrillNode = async (node: NodePorts) => {
    startNode(t, node, drillNodeEnv(t, node, database), { cgroup: cutoffs?.cgroupOf(node.name) });
    await waitFor(`${node.name} (web on ${node.web})`, () => answersReady(node.web), 180_000);
  };
  say(
    `topology on ${o.base}: Redis Cluster ${t.redisPorts[0]}-${t.redisPorts[5]}, PgBouncer ${t.pgbouncerPort} in front of ${postgres.host}:${postgres.port}, database ${database}`,
  );
  await bringUp(t, postgres, startDrillNode);
  say(
    `${t.nodes.map((n) => `${n.name} (web ${n.web}, log ${nodeLog(t, n)})`).join(', ')} behind HAProxy: the service is ${serviceUrl}`,
  );

  const receiverPort = o.base + RECEIVER_OFFSET;
  // idle connections closed soon: a failover drops them, and a dead one must not be handed out
  const db: Knex = knex({
    client: 'pg',
    connection: { connectionString: o.databaseUrl, application_name: APP_NAME },
    pool: { min: 0, max: 4, idleTimeoutMillis: 1000 },
  });
  const { receiver, received, merchant, secrets, poster, load, lookups } = await startMerchantSide({
    adminUrl: `http://127.0.0.1:${nodeA.admin}`,
    serviceUrl,
    receiverPort,
    db,
  });
  const straightAtNodeA = nodeClient(merchant, nodeA);
  say(`merchant ${merchant.id}; load through HAProxy and faults for ${o.durationS} s`);

  const startedAt = Date.now();
  const probesDuring = async (during: string) =>
    load.probes(merchant.client, poster, await load.refundablePayments(10), during);
  const faults =
    o.ha || !cutoffs
      ? breakDatabase(o.ha!, startedAt, o.durationS, probesDuring)
      : breakThings({
          t,
          startedAt,
          durationS: o.durationS,
          cutoffs,
          postgres,
          startNode: startDrillNode,
          cutProbes: async () => {
            const refundable = await load.refundablePayments(10);
            return {
              ...named(load.probes(merchant.client, poster, refundable, 'the cut-off'), 'via HAProxy'),
              ...named(
                load.probes(straightAtNodeA.client, straightAtNodeA.poster, refundable, 'the cut-off'),
                `at ${nodeA.name}`,
              ),
            };
          },
        });
  let faultsOver = false;
  // (a rejection is the Promise.all's below)
  void faults.finally(() => (faultsOver = true)).catch(() => undefined);
  const end = startedAt + o.durationS * 1000;
  const [, broken] = await Promise.all([load.run(o.rate, () => Date.now() < end || !faultsOver), faults]);
  const loadS = Math.round((Date.now() - startedAt) / 1000);
  await load.settled();
  say(`load over after ${loadS} s; waiting up to ${o.drainS} s for every object to be final and every event delivered`);

  await waitUntilFinal(db, merchant.id, o.drainS);
  const outcome = await assessOutcome(
    db,
    merchant.id,
    load,
    received,
    sandboxProvider(`http://127.0.0.1:${nodeA.sandbox}`),
  );
  const checks = [
    ...outcome.checks,
    ...('changes' in broken ? [] : [boundedAnswersCheck(`${nodeA.name} cut off (network, ${CUT_S} s)`, broken.cut)]),
    ...broken.checks,
  ];
  await db.destroy();
  receiver.close();
  // stopped gracefully, so that their logs are whole
  for (const node of t.nodes) await stopNode(t, node);
  const leaks = await scanLogsForLeaks(
    t.nodes.map((n) => nodeLog(t, n)),
    {
      values: secrets,
      signatures: new Set([...poster.signatures, ...straightAtNodeA.poster.signatures]),
    },
  );
  checks.push(logLeaksCheck(leaks, lookups));

  if ('changes' in broken) {
    process.stdout.write(
      `\nleader changes (time without a writable leader, through the leader's HAProxy):\n${leaderChangesTable(broken.changes)}\n`,
    );
    return printReport({
      headline:
        `chaos drill across the topology on HA Postgres (etcd, 2 Postgres 15 nodes under Patroni, synchronous standby; PgBouncer in front of the leader's HAProxy; Redis Cluster 3 masters + 3 replicas; ${t.nodes.length} nodes behind the TLS edge): ${loadS} s of load through HAProxy (--duration ${o.durationS}); ` +
        `faults: ${broken.changes.map((c) => c.fault).join('; ')}`,
      outcome,
      tally: load.tally,
      checks,
      leaks,
      logs: `node logs: ${t.nodes.map((n) => keptLog(t, n)).join(', ')}; Patroni logs: ${o.ha!.nodes.map((n) => patroniLog(n)).join(', ')} (removed by cluster:down)`,
    });
  }
  return printReport({
    headline:
      `chaos drill across the topology (Redis Cluster 3 masters + 3 replicas, PgBouncer, ${t.nodes.length} nodes behind HAProxy): ${loadS} s of load through HAProxy (--duration ${o.durationS}, longer if a fault ran late); ` +
      `faults: kill -9 of ${t.nodes[1].name} and its restart, a Redis master killed and restarted as a replica, PgBouncer killed and restarted, ${nodeA.name} cut off from Redis and Postgres for ${CUT_S} s (a network cut: iptables DROP by cgroup, ${broken.cutProcesses} processes; not a freeze)`,
    outcome,
    tally: load.tally,
    checks,
    leaks,
    logs: `node logs: ${t.nodes.map((n) => keptLog(t, n)).join(', ')}`,
  });
}

/** The Redis Cluster and PgBouncer (as clusterUp starts them), the nodes one after the other (the first migrates the database), then HAProxy. */
async function bringUp(
  t: Topology,
  postgres: { host: string; port: number },
  startDrillNode: (node: NodePorts) => Promise<void>,
): Promise<void> {
  await clusterUp(t, postgres);
  execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts/build.js'), '--if-stale'], {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
  });
  for (const node of t.nodes) {
    writeFileSync(nodeLog(t, node), ''); // a log of this run only
    await startDrillNode(node);
  }
  if (!(await portOpen(t.haproxyPort))) startHaproxy(t);
  await waitFor(`HAProxy on ${t.haproxyHttpPort}`, () => edgeReady(t), 30_000);
}

interface FaultPlan {
  t: Topology;
  startedAt: number;
  durationS: number;
  cutoffs: NodeCutoffs;
  postgres: { host: string; port: number };
  /** starts a node again after its kill -9, and waits until it is ready */
  startNode: (node: NodePorts) => Promise<void>;
  /** the requests timed, once a second each, while node-a is cut off */
  cutProbes: () => Promise<Parameters<typeof probeUntil>[1]>;
}

/**
 * The faults, one after the other, each at its share of the duration or once the one before is
 * over: a check for each but the cut-off, whose outcome is the requests timed meanwhile
 * (undefined, so 'not run', if it could not be done).
 */
async function breakThings(
  f: FaultPlan,
): Promise<{ checks: Check[]; cut: PartitionProbes | undefined; cutProcesses: number }> {
  const { t, cutoffs } = f;
  const [nodeA, nodeB] = t.nodes;
  const at = (share: number) => sleep(Math.max(0, f.startedAt + share * f.durationS * 1000 - Date.now()));
  const checks: Check[] = [];
  /** A fault that throws is a failed check, and the drill goes on. */
  const record = async (name: string, fault: () => Promise<FaultOutcome>) => {
    const { ok, detail } = await fault().catch((err: Error) => ({ ok: false, detail: err.message }));
    checks.push({ name, ok, detail });
  };

  await at(0.1);
  await record(`fault: kill -9 ${nodeB.name}`, () =>
    killWholeNode(
      t,
      nodeB,
      () => processesIn(cutoffs.cgroupOf(nodeB.name)),
      NODE_DOWN_MS,
      () => f.startNode(nodeB),
    ),
  );
  await at(0.35);
  await record('fault: Redis master', () => killRedisMaster(t, REDIS_MASTER_DOWN_MS));
  await at(0.55);
  await record('fault: PgBouncer restart', () => restartPgbouncer(t, f.postgres, PGBOUNCER_DOWN_MS));
  await at(0.7);
  const cutProcesses = processesIn(cutoffs.cgroupOf(nodeA.name)).length;
  let cut: PartitionProbes | undefined;
  try {
    const probes = await f.cutProbes();
    say(
      `${nodeA.name} cut off from Redis and Postgres for ${CUT_S} s (iptables drops the packets of its ${cutProcesses} processes' sockets)`,
    );
    cut = await probeUntil(
      cutoffs.cut(nodeA.name, [...t.redisPorts, t.pgbouncerPort, f.postgres.port], CUT_S * 1000),
      probes,
    );
    say(`${nodeA.name} cut-off over`);
  } catch (err) {
    say(`${nodeA.name} cut-off failed: ${(err as Error).message}`);
  }
  return { checks, cut, cutProcesses };
}

/**
 * The faults of the HA drill, each at its share of the duration (or once the one before is over):
 * 15 % the leader killed with its disk lost, 45 % a switchover, 70 % the leader (the other node
 * now) killed with its disk lost again. The requests timed meanwhile must all be answered within
 * bounds; each leader change is a check (a new leader, writable within 30 s, the old node its
 * synchronous standby again).
 */
async function breakDatabase(
  h: HaTopology,
  startedAt: number,
  durationS: number,
  probes: (during: string) => Promise<Parameters<typeof probeUntil>[1]>,
): Promise<{ checks: Check[]; changes: LeaderChange[] }> {
  const at = (share: number) => sleep(Math.max(0, startedAt + share * durationS * 1000 - Date.now()));
  const checks: Check[] = [];
  const changes: LeaderChange[] = [];
  const plan: [number, string, () => Promise<LeaderChange>][] = [
    [0.15, 'leader killed, disk lost', () => loseLeaderWithDisk(h)],
    [0.45, 'switchover', () => plannedSwitchover(h)],
    [0.7, 'leader killed, disk lost (again)', () => loseLeaderWithDisk(h)],
  ];
  for (const [share, name, fault] of plan) {
    await at(share);
    let change: LeaderChange | undefined;
    // the probes' payments to refund are read before the fault: the drill's own connections fail over too
    const timed = await probes(name).catch(() => ({}) as Parameters<typeof probeUntil>[1]);
    const answers = await probeUntil(
      fault().then(
        (c) => {
          change = c;
        },
        (err: Error) => {
          say(`${name} failed: ${err.message}`);
        },
      ),
      timed,
    );
    if (change) changes.push(change);
    checks.push({
      name: `fault: ${name}`,
      ok: !!change?.ok,
      detail: change
        ? `${change.from} -> ${change.to ?? 'none'}, no writable leader for ${change.unwritableS.toFixed(1)} s, ${change.from} synchronous standby again: ${change.healthyS === undefined ? 'never' : `after ${change.healthyS.toFixed(1)} s`}`
        : 'not run',
    });
    checks.push(boundedAnswersCheck(`requests during: ${name}`, answers));
  }
  return { checks, changes };
}

/** The drill's merchant, signing its requests to one node directly rather than through HAProxy. */
function nodeClient(merchant: DrillMerchant, node: NodePorts): { client: ServiceClient; poster: SignedPoster } {
  const client = new ServiceClient({
    baseUrl: `http://127.0.0.1:${node.web}`,
    apiKey: merchant.credential.api_key,
    secret: merchant.credential.secret,
  });
  return { client, poster: new SignedPoster(client) };
}

/** The probes, each name followed by `where` (the same request sent two ways). */
function named<T>(probes: Record<string, T>, where: string): Record<string, T> {
  return Object.fromEntries(Object.entries(probes).map(([name, probe]) => [`${name} ${where}`, probe]));
}
