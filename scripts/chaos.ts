import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { randomInt } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import knex, { type Knex } from 'knex';
import { Redis } from 'ioredis';
import { which } from './local-services';
import { scanLogForLeaks } from './chaos-leaks';
import { ADMIN_TOKEN, DRILL_SERVICE_ENV, sandboxProvider, say, startMerchantSide } from './chaos-merchant';
import { operatorApi } from './lib/demo';
import { probeUntil, type PartitionProbes } from './chaos-partition';
import { portInUseIn, takenPorts } from './chaos-ports';
import { startTcpProxy } from './chaos-proxy';
import { assessOutcome, boundedAnswersCheck, logLeaksCheck, printReport, waitUntilFinal } from './chaos-report';
import { runTopologyDrill } from './chaos-topology';
import { startLiveConnectors, type LiveConnectors } from './chaos-live';
import { edgeCertificate } from './cluster';
import { haTopologyAt } from './ha';
import { answers200, pidAlive, sleep, stopAll, waitFor } from './lib/processes';
import { spawnRedisServer, startRedisServer } from './lib/stack';

/**
 * `npm run chaos -- --duration 300`: an operator's fault drill. It starts the whole service
 * (`npm start`: two web processes on one port, every pool) on its own ports, database and Redis
 * (a private `redis-server --save ""` when the machine has one, else a Redis database index of
 * REDIS_URL), with its Postgres connections through a TCP proxy of its own, then for the
 * duration sends a steady load of payments, refunds and payouts on sandbox numbers while it
 * breaks things: `kill -9` of a random service process every few seconds (the supervisor starts
 * it again; none from 10 s before the partition below to its end), one FLUSHDB of its Redis database, one Redis
 * restart (only of its own redis-server), one cut of every Postgres connection of the service
 * (pg_terminate_backend, its database only), and 5 s later one 20-second Postgres partition (the
 * proxy forwards nothing and answers no new connection) during which it times requests of its own. Meanwhile it sends some
 * of its accepted signed POSTs again, byte for byte, with a new Idempotency-Key, with none and
 * with the first one. Then it waits for every object to be final and every event delivered,
 * stops the service and prints two tables: the objects (requested, refused, created, final,
 * lost, doubled) and the checks:
 *   webhook events      every event delivered
 *   ledger              every transaction sums to zero, every cached balance equals its entries
 *   provider: <object>  each final status agrees with what the sandbox provider says it did
 *                       (succeeded, or failed/cancelled/expired/never taken); also how many
 *                       create requests it got per operation (repeats carry the same key)
 *   signed replays      every replay with another key or none refused (409 request-replayed)
 *                       and none acted; with the first key, the first answer again
 *   Postgres partition  every request answered within 7 s (5 s + 2 s slack): 2xx, 4xx, or 503
 *                       service-unavailable with Retry-After; none hung or dropped
 *   log leaks           no full phone number, card number, API key, secret or signature in
 *                       any process's log (the drill looks up phone numbers in four spellings)
 * Exit code 1 on anything lost or doubled or any failed check; 2 when the drill cannot run (a
 * port taken, the service not starting).
 *
 * Ports, all from --base-port p (each checked free before anything starts): p web (merchant
 * API, provider callbacks), p+1 operator API, p+2 sandbox mobile-money provider, p+3 private
 * redis-server, p+4 webhook receiver, p+5 card vault sandbox, p+6 card acquirer sandbox, p+7
 * Postgres proxy.
 *
 * Options: --duration s (300), --base-port p (5200), --database-url
 * (postgres://postgres@127.0.0.1:5432/svc_chaos), --redis-url (only when no private
 * redis-server may be started; must name its own database index), --rate payments per second
 * (4), --drain s (300: how long, after the load ends, every object may take to be final and
 * every event to be delivered). The service's output goes to $TMPDIR/chaos-<p>.log.
 *
 * `npm run chaos -- --topology cluster --duration 180 --base-port 7400` is the drill across the
 * distributed topology instead (scripts/chaos-topology.ts): a Redis Cluster, PgBouncer and two
 * nodes behind HAProxy (scripts/cluster.ts), the same load through HAProxy, and as faults a
 * kill -9 of a whole node then its restart, a Redis master killed then restarted as a replica,
 * a PgBouncer restart, and one node cut off from Redis and Postgres for 20 s (a network cut:
 * iptables drops the node's packets by its cgroup). Its defaults: --base-port CLUSTER_BASE_PORT
 * or 7100, --database-url postgres://postgres@127.0.0.1:5432/svc_chaos_topology.
 *
 * `npm run chaos -- --live-connectors --duration 120 --base-port 5700` is this drill with a LIVE
 * merchant whose operators are routed through the connectors' simulators (scripts/chaos-live.ts:
 * vodacom and orange to pawaPay on p+20, airtel to Airtel on p+21, cards to the Mastercard
 * Gateway simulator on p+22), with an agreement row per connector; a second live merchant pays by
 * card meanwhile (scripts/chaos-cards.ts: card-charge killed during PAY, a 5xx after the PAY was
 * made, notifications duplicated, late and lost; the rows `cards: charged once`, `cards: ledger`,
 * `cards: faults`). Its default database: postgres://postgres@127.0.0.1:5432/svc_chaos_live.
 */

const ROOT = path.resolve(__dirname, '..');
const APP_NAME = 'chaos-drill';
const PARTITION_S = 20;

const { values: opts } = parseArgs({
  options: {
    topology: { type: 'string' },
    'live-connectors': { type: 'boolean', default: false },
    duration: { type: 'string', default: '300' },
    'base-port': { type: 'string' },
    'database-url': { type: 'string' },
    'redis-url': { type: 'string' },
    rate: { type: 'string', default: '4' },
    drain: { type: 'string', default: '300' },
    // --topology cluster only: single (the machine's Postgres) or ha (scripts/ha.ts, and the database faults)
    db: { type: 'string', default: 'single' },
    'pg-base': { type: 'string', default: process.env.HA_PG_BASE || '5433' },
    'etcd-base': { type: 'string', default: process.env.HA_ETCD_BASE || '5441' },
  },
});
if (opts.db !== 'single' && opts.db !== 'ha') throw new Error('--db is single or ha');
if (opts.db === 'ha' && !opts.topology) throw new Error('--db ha goes with --topology cluster');
const ha = opts.db === 'ha' ? haTopologyAt(Number(opts['pg-base']), Number(opts['etcd-base'])) : undefined;
if (opts.topology !== undefined && opts.topology !== 'cluster')
  throw new Error('--topology takes one value: cluster (scripts/chaos-topology.ts)');
if (opts.topology && opts['live-connectors'])
  throw new Error('--live-connectors is for the single-machine drill, not --topology cluster');
if (opts.topology && opts['redis-url'])
  throw new Error('--redis-url is for the single-machine drill: --topology cluster starts a Redis Cluster of its own');
const durationS = Number(opts.duration);
const base = Number(
  opts['base-port'] ??
    (opts.topology ? process.env.CLUSTER_BASE_PORT || '7100' : process.env.CHAOS_BASE_PORT || '5200'),
);
const databaseUrl =
  opts['database-url'] ??
  (ha
    ? `postgres://postgres@127.0.0.1:${ha.leaderPort}/svc_chaos_topology`
    : opts.topology
      ? 'postgres://postgres@127.0.0.1:5432/svc_chaos_topology'
      : opts['live-connectors']
        ? 'postgres://postgres@127.0.0.1:5432/svc_chaos_live'
        : process.env.CHAOS_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/svc_chaos');
const rate = Number(opts.rate);
const drainS = Number(opts.drain);
for (const [name, v] of [
  ['duration', durationS],
  ['base-port', base],
  ['rate', rate],
  ['drain', drainS],
] as const) {
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
}
/** What each port is for, in --base-port order (p, p+1, …). */
const PORT_ROLES = {
  web: 'web (merchant API)',
  admin: 'operator API',
  sandbox: 'sandbox mobile-money provider',
  redis: 'private redis-server',
  receiver: 'webhook receiver',
  cardVault: 'card vault sandbox',
  cardAcquirer: 'card acquirer sandbox',
  pgProxy: 'Postgres proxy',
} as const;
type PortRole = keyof typeof PORT_ROLES;
const ports = Object.fromEntries(Object.keys(PORT_ROLES).map((role, i) => [role, base + i])) as Record<
  PortRole,
  number
>;
if (ports.pgProxy > 65535)
  throw new Error(`--base-port must leave room for ${Object.keys(PORT_ROLES).length} ports below 65536`);
const roleOf = (port: number) => Object.entries(ports).find(([, p]) => p === port)?.[0] as PortRole | undefined;

const logFile = path.join(os.tmpdir(), `chaos-${base}.log`);
/** opened once the ports are known free (a drill refused must not empty the log of one running) */
let out: WriteStream | undefined;
/** Writes to the log file, until it is closed for the scan. */
const toLog = (chunk: Buffer | string) => {
  if (out && !out.writableEnded) out.write(chunk);
};

// ---------------------------------------------------------------- the service under test

let redisServer: ChildProcess | null = null;
async function startRedis(): Promise<string> {
  if (opts['redis-url']) {
    const u = new URL(opts['redis-url']);
    if (!/^\/\d+$/.test(u.pathname) || u.pathname === '/0')
      throw new Error('--redis-url must name a Redis database index of its own (redis://host:port/N, N > 0)');
    return opts['redis-url'];
  }
  if (!existsSync('/usr/bin/redis-server') && !which('redis-server'))
    throw new Error(
      'no redis-server on this machine: pass --redis-url redis://127.0.0.1:6379/N with a database index of its own',
    );
  redisServer = await startRedisServer(ports.redis, toLog);
  return `redis://127.0.0.1:${ports.redis}/2`;
}

/** Exit code 2, everything the drill started stopped: the drill could not run. */
function cannotRun(reason: string): never {
  process.stderr.write(`chaos failed: ${reason}\n`);
  supervisor?.kill('SIGINT');
  redisServer?.kill('SIGTERM');
  process.exit(2);
}
const portsTaken = (taken: number[]) =>
  `${taken.map((port) => `port ${port} (${PORT_ROLES[roleOf(port)!] ?? 'not one of the drill'})`).join(', ')} taken: choose another --base-port`;

/** Every port the drill will open must be free before anything starts. */
async function refuseTakenPorts(): Promise<void> {
  const needed = Object.fromEntries(Object.entries(ports).filter(([role]) => role !== 'redis' || !opts['redis-url']));
  const taken = await takenPorts(needed);
  if (taken.length) cannotRun(portsTaken(taken.map(({ port }) => port)));
}

/** The supervisor (`npm start`) and the pids it reports for each Procfile line. */
const pids = new Map<number, string>();
let supervisor: ChildProcess | undefined;
function startService(env: Record<string, string>): ChildProcess {
  const child = (supervisor = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let buf = '';
  const onData = (chunk: Buffer) => {
    toLog(chunk);
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const started = /^start \| (\S+) started \(pid (\d+)\)/.exec(line);
      if (started) pids.set(Number(started[2]), started[1]);
      const exited = /^start \| (\S+) exited/.exec(line);
      if (exited) for (const [pid, name] of pids) if (name === exited[1] && !pidAlive(pid)) pids.delete(pid);
      const inUse = portInUseIn(line);
      if (inUse !== undefined) cannotRun(`a service process could not listen: ${portsTaken([inUse])}`);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return child;
}
/** Service processes that may be killed: every pool, the web primary and its web processes (never the sandbox: it is the provider). */
function targets(): { pid: number; name: string }[] {
  const list: { pid: number; name: string }[] = [];
  for (const [pid, name] of pids) {
    if (name === 'sandbox-provider' || !pidAlive(pid)) continue;
    list.push({ pid, name });
    if (name === 'web') {
      try {
        for (const child of execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
          .split('\n')
          .map((s) => Number(s.trim()))
          .filter(Boolean))
          list.push({ pid: child, name: 'web (cluster)' });
      } catch {
        /* no children right now */
      }
    }
  }
  return list;
}
/** Stops the service gracefully (SIGKILL after 45 s) and its Redis; resolves once the log file is complete. */
async function stopService(service: ChildProcess): Promise<void> {
  await stopAll([service], 'SIGINT', 45_000);
  redisServer?.kill('SIGTERM');
  await new Promise((r) => out!.end(r));
}

/** Resolves once the web answers /health/ready, or after `ms` all the same (the drill then goes on, and its checks tell). */
const webReady = (ms: number) =>
  waitFor('the web', () => answers200(`http://127.0.0.1:${ports.web}/health/ready`), ms, 500).catch(() => undefined);

// ---------------------------------------------------------------- the drill

async function main() {
  await refuseTakenPorts();
  out = createWriteStream(logFile);
  const dbUrl = new URL(databaseUrl);
  const dbName = dbUrl.pathname.slice(1);
  const serviceDbUrl = new URL(dbUrl);
  serviceDbUrl.host = `127.0.0.1:${ports.pgProxy}`;
  const proxy = await startTcpProxy(ports.pgProxy, { host: dbUrl.hostname, port: Number(dbUrl.port || 5432) });
  const redisUrl = await startRedis();
  const db: Knex = knex({
    client: 'pg',
    connection: { connectionString: databaseUrl, application_name: APP_NAME },
    pool: { min: 0, max: 4 },
  });
  /** --live-connectors: the simulators, and the settings routing live operators to them */
  const live: LiveConnectors | undefined = opts['live-connectors']
    ? await startLiveConnectors(base, ports.web, db).catch((err) => cannotRun(err.message))
    : undefined;
  say(
    `service on 127.0.0.1:${ports.web} (operator API :${ports.admin}), database ${dbName} through 127.0.0.1:${ports.pgProxy}, Redis ${redisUrl}${redisServer ? ' (private redis-server, no persistence)' : ''}; service log ${logFile}`,
  );
  const service = startService({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    PORT: String(ports.web),
    ADMIN_PORT: String(ports.admin),
    WEB_CONCURRENCY: '2',
    BASE_URL: `http://127.0.0.1:${ports.web}`,
    DATABASE_URL: serviceDbUrl.href,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: '{chaos}',
    SANDBOX_PROVIDER_PORT: String(ports.sandbox),
    SANDBOX_PROVIDER_URL: `http://127.0.0.1:${ports.sandbox}`,
    CARD_VAULT_PORT: String(ports.cardVault),
    CARD_VAULT_URL: `http://127.0.0.1:${ports.cardVault}`,
    CARD_PROVIDER_PORT: String(ports.cardAcquirer),
    CARD_PROVIDER_URL: `http://127.0.0.1:${ports.cardAcquirer}`,
    ...DRILL_SERVICE_ENV,
    ...live?.env,
  });
  await webReady(120_000);
  const { receiver, received, merchant, secrets, poster, load, lookups } = await startMerchantSide({
    adminUrl: `http://127.0.0.1:${ports.admin}`,
    serviceUrl: `http://127.0.0.1:${ports.web}`,
    receiverPort: ports.receiver,
    db,
    create: live && ((admin, url) => live.createMerchant(admin, url)),
    requests: live?.requests,
  });
  const { client } = merchant;
  const cardMerchant = await live?.cards.createMerchant(operatorApi(`http://127.0.0.1:${ports.admin}`, ADMIN_TOKEN));
  say(
    `merchant ${merchant.id}${cardMerchant ? `, live cards merchant ${cardMerchant.id}` : ''}; load and faults for ${durationS} s`,
  );

  const start = Date.now();
  const end = start + durationS * 1000;
  const faults = { kills: 0, flush: 0, redisRestart: 0, pgCut: 0, partition: 0 };
  const killedBy = new Map<string, number>();
  let partition: PartitionProbes | undefined;
  /** no kill while Postgres is partitioned: a dropped connection would be the drill's doing, not a wait */
  let partitioned = false;

  /** kill -9 of the card-charge worker (the supervisor starts it again); false when none runs */
  const killCardCharge = () => {
    const victim = targets().find((t) => t.name === 'card-charge');
    if (!victim) return false;
    try {
      process.kill(victim.pid, 'SIGKILL');
    } catch {
      return false;
    }
    faults.kills++;
    killedBy.set('card-charge during PAY', (killedBy.get('card-charge during PAY') ?? 0) + 1);
    toLog(`chaos | kill -9 card-charge during PAY (pid ${victim.pid})\n`);
    return true;
  };

  const loops = [
    // live cards: a card payment every 1-2 s, card-charge killed during a PAY every ~10 s (scripts/chaos-cards.ts)
    ...(live ? [live.cards.run(() => Date.now() < end, killCardCharge)] : []),
    // steady load: payments at --rate per second, a payout a second, a refund for a third of the succeeded payments
    load.run(rate, () => Date.now() < end),
    // kill -9 of a random service process every 3 to 7 s, except during the partition
    (async () => {
      await sleep(5000);
      while (Date.now() < end) {
        const list = partitioned ? [] : targets();
        if (list.length) {
          const victim = list[randomInt(list.length)];
          try {
            process.kill(victim.pid, 'SIGKILL');
            faults.kills++;
            killedBy.set(victim.name, (killedBy.get(victim.name) ?? 0) + 1);
            toLog(`chaos | kill -9 ${victim.name} (pid ${victim.pid})\n`);
          } catch {
            /* already gone */
          }
        }
        await sleep(randomInt(3000, 7000));
      }
    })(),
    // one FLUSHDB of the service's Redis database, at a quarter of the run
    (async () => {
      await sleep(durationS * 250);
      const r = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
      r.on('error', () => undefined);
      await r.flushdb();
      r.disconnect();
      faults.flush++;
      say(`FLUSHDB of ${redisUrl}`);
    })(),
    // one Redis restart (its own redis-server only), at half the run
    (async () => {
      await sleep(durationS * 500);
      if (!redisServer) return say('Redis restart skipped: not a redis-server of this drill');
      const stopped = new Promise((res) => redisServer!.once('exit', res));
      const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
      r.on('error', () => undefined);
      await r.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
      r.disconnect();
      await stopped;
      await sleep(2000);
      redisServer = spawnRedisServer(ports.redis, toLog);
      faults.redisRestart++;
      say('Redis restarted without persistence (every job lost), down 2 s');
    })(),
    // one cut of every Postgres connection of the service, at three quarters of the run
    (async () => {
      await sleep(durationS * 750);
      const pg = knex({
        client: 'pg',
        connection: { connectionString: databaseUrl.replace(/\/[^/]*$/, '/postgres'), application_name: APP_NAME },
        pool: { min: 0, max: 1 },
      });
      const { rows } = await pg.raw(
        `select count(pg_terminate_backend(pid)) as n from pg_stat_activity where datname = ? and pid <> pg_backend_pid() and application_name <> ?`,
        [dbName, APP_NAME],
      );
      await pg.destroy();
      faults.pgCut++;
      say(`Postgres: ${rows[0].n} connections of ${dbName} terminated`);
    })(),
    // one Postgres partition, 5 s after the cut: requests of every kind, each timed, while it lasts
    (async () => {
      // no kill from 10 s before it, and the web ready when it starts: a web process still
      // starting again after a kill would refuse connections, the drill's doing, not Postgres's
      await sleep(durationS * 750 - 5000);
      partitioned = true;
      await sleep(10_000);
      await webReady(30_000);
      const refundable = await load.refundablePayments(10);
      say(`Postgres partitioned for ${PARTITION_S} s (its proxy forwards nothing)`);
      partition = await probeUntil(
        proxy.partition(PARTITION_S * 1000),
        load.probes(client, poster, refundable, 'the partition'),
      );
      partitioned = false;
      faults.partition++;
      say('Postgres partition over');
    })(),
  ];
  await Promise.all(loops);
  await load.settled();
  say(
    `load over after ${Math.round((Date.now() - start) / 1000)} s; waiting up to ${drainS} s for every object to be final and every event delivered`,
  );

  // ---------------------------------------------------------------- the outcome
  await waitUntilFinal(db, merchant.id, drainS);
  await live?.cards.waitUntilFinal(drainS);
  const outcome = live
    ? await live.assess(db, merchant.id, load)
    : await assessOutcome(db, merchant.id, load, received, sandboxProvider(`http://127.0.0.1:${ports.sandbox}`));
  const checks = [...outcome.checks, boundedAnswersCheck('Postgres partition', partition)];

  await db.destroy();
  receiver.close();
  await stopService(service);
  proxy.close();
  await live?.close();
  const leaks = await scanLogForLeaks(logFile, {
    values: [...secrets, ...(live?.secrets ?? [])].filter(Boolean),
    signatures: poster.signatures,
  });
  checks.push(logLeaksCheck(leaks, lookups));

  const kills = [...killedBy].map(([n, c]) => `${n} ${c}`).join(', ');
  const code = printReport({
    headline: `chaos drill${live ? ` (${live.describe})` : ''}: ${durationS} s of load; faults: ${faults.kills} × kill -9 (${kills}), ${faults.flush} × Redis FLUSHDB, ${faults.redisRestart} × Redis restart, ${faults.pgCut} × Postgres connection cut, ${faults.partition} × Postgres partition (${PARTITION_S} s)`,
    outcome,
    tally: load.tally,
    checks,
    leaks,
    logs: `service log: ${logFile}`,
  });
  process.exit(code);
}

if (opts.topology && process.env.NODE_EXTRA_CA_CERTS !== edgeCertificate().crt) {
  // the drill's clients reach the service through the TLS edge: this process must trust its
  // local certificate, which Node reads only at start; the drill runs again in a child that does
  const child = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: edgeCertificate().crt },
  });
  process.exit(child.status ?? 2);
} else if (opts.topology) {
  runTopologyDrill({ durationS, base, databaseUrl, rate, drainS, ha }).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`chaos failed: ${err.stack ?? err.message}\n`);
      process.exit(2);
    },
  );
} else {
  main().catch((err) => cannotRun(err.code === 'EADDRINUSE' ? portsTaken([err.port]) : (err.stack ?? err.message)));
}
