/**
 * npm run bench:e2e: complete payments per second through the whole stack, as an operator runs it.
 *
 * Every Procfile line runs as its own process (web, outbox-relay, provider-push,
 * callback-reconciler, sandbox-provider, webhook-sender, refund, payout, settlement) on a
 * database of its own cloned from the migrated template, a Redis database index of its own and
 * a fresh queue prefix. The sandbox provider calls back after SANDBOX_CALLBACK_DELAY_MS (5 ms
 * here); one webhook receiver (a child process of the bench) answers 200 at once. A payment is
 * complete when its `payment.succeeded` webhook arrived.
 *
 * Load (bench-e2e-load.ts): open loop (bench-common.ts: requests leave evenly spaced whatever the answers), one step
 * per rate given, each for --seconds, POST /v1/payments spread round-robin over enough API keys
 * of one merchant to stay under the spec's 100 requests a minute per key (the rate limit stays
 * as in production). Each is signed as it is sent, so its X-Timestamp is fresh however long the
 * step (the service refuses one older than 300 s). A stack starts with a warm-up of 30 s at 100/s, whatever the
 * steps (WARMUP), then VACUUM ANALYZE: a service runs for days, so each step measures one whose
 * JIT has optimised the payment path (V8 tiers a function up after enough calls: warmed with
 * 200 payments, the first 20/s step cost 28.9 ms per payment against 22.7 ms for a 20/s step
 * after 8,000 more), whose pools and caches are filled, and whose tables hold some thousand rows
 * (Postgres keeps a connection's generic plan until an ANALYZE, and a plan made for empty tables
 * scans them whole as they grow). After each step the bench waits for the backlog to drain,
 * then runs VACUUM ANALYZE on its database (autovacuum is often off on development servers: the
 * bench warns when it is).
 *
 * Per step: created/s (201s), webhooks/s (payment.succeeded receipts during the step), POST p50
 * and p99, creation → webhook p50 and p99 (from the moment the POST left to the receipt), lost
 * (created, no webhook once drained) and duplicate (a payment's webhook received again) counts,
 * CPU milliseconds per payment of each process (from /proc/<pid>/stat over the step and its
 * drain), of the Postgres backends serving each process (pg_stat_activity → /proc), of
 * Postgres' own background processes and of the Redis server (INFO cpu; the whole server, so
 * shared with anyone else using it, unless --private-redis), Redis commands per payment, and
 * the queue depths over time. A step is sustained when it created at least 97 % of its rate,
 * webhooks arrived during the step at 95 % of its rate or more, its backlog (jobs waiting in
 * every queue) did not grow over the step's second half by more than a second's worth of
 * payments, and the last webhook arrived within --sustained-drain seconds (5) after the step
 * (a step that merely drains within --drain-max is kept up with later, not sustained). The
 * last line is `max sustained: N/s`, the highest sustained rate (after the overload step's block).
 *
 * Bare-Koa baseline: before anything else starts, a bare Koa app (bench-common.ts bareKoaApp:
 * raw-body, JSON.parse, 201) runs in a child process and takes a closed loop of 32 connections
 * for --bare-seconds (after a second of warm-up), as in bench:payments: `bare Koa: N POST/s, X ms
 * CPU per POST` (the child's CPU from /proc/<pid>/stat over the measured seconds, per answer).
 * Each step then gives its CPU per payment in bare POSTs too (CPU per payment ÷ CPU per bare POST),
 * in total (the `bare POSTs` column) and per process, so that runs on machines of different
 * speed compare.
 *
 * Overload step: after the rate steps, the stack is offered --overload R per second (default
 * twice the max sustained rate; none when nothing was sustained, or with --no-overload) for
 * --overload-seconds, open loop, on API keys of its own, each request cut after 10 s (a
 * timeout). It prints the answers by status (201, 503, other, connection errors, timeouts) with
 * the count and p99 latency of each and the p99 of every answer; whether every 503 carried
 * Retry-After and the error code `service-unavailable`; lost and duplicate webhooks over the
 * accepted payments (those of the recovery too) once drained. Recovery: right after the load, 20
 * payments a second for 15 s, and the per-second POST p99 (by second of sending) against twice the
 * POST p99 of the lowest rate step: `back to normal latency after N s`, from the first second
 * after which every second stays within it (or `not back within 15 s`). Then `overload: PASS` when
 * there was no connection error and no timeout, the p99 of every answer is at most 1000 ms and
 * that of the 503s at most 100 ms, nothing was lost or doubled and latency was back within 10 s,
 * else `overload: FAIL (<reasons>)`. The service refuses by itself (api/middleware/overload.ts,
 * OVERLOAD_*, as configured in its environment: the bench sets none); the bench only measures.
 * With --compare, once per value, each on a stack of its own.
 *
 * Topology: --topology single (default) is the one Redis of --redis-url and the Postgres of
 * TEST_DATABASE_SERVER_URL, as above. --topology cluster starts its own Redis Cluster (3 masters
 * + 3 replicas, Debian's redis-server) and PgBouncer (transaction pooling, in front of that
 * Postgres) with scripts/cluster.ts on port+10 … port+15 and port+16, and runs the same
 * processes on it with cluster.ts topologyEnv's settings (REDIS_URL=redis-cluster://…,
 * DATABASE_URL through PgBouncer, DB_PREPARED_STATEMENTS=false) and a queue prefix without a
 * hash tag; it stops the cluster at the end, also on a failure or Ctrl-C. Redis CPU is then the
 * sum over the six redis-servers (INFO cpu of each), Redis commands per payment the sum over the
 * masters, and PgBouncer's CPU is counted (/proc); Postgres backends serve whichever process
 * PgBouncer hands them to, so their CPU is one `postgres ← PgBouncer` figure. The bench's own
 * reads (VACUUM, counts, pg_stat_activity) go straight to Postgres.
 *
 * Options (command line):
 *   --rates 20,100,200,…,600 the steps (per second), in order, until one is not sustained
 *   --seconds 60             length of each step
 *   --port 3900              the web's port; the sandbox takes port+1, the receiver port+2,
 *                            a private Redis port+3, the card sandboxes port+4 and port+5,
 *                            --topology cluster port+10 … port+16
 *   --topology single        single: one Redis (--redis-url); cluster: a Redis Cluster and
 *                            PgBouncer of the bench's own (see Topology above)
 *   --database svc_bench_e2e the database (dropped and cloned from the template at start,
 *                            dropped at the end unless --keep)
 *   --redis-url URL          default REDIS_URL or redis://127.0.0.1:6379, with --redis-db
 *                            (--topology single only)
 *   --redis-db 0             the Redis database index (a Redis Cluster has only 0: not used there)
 *   --private-redis          run a private redis-server on port+3 (exact Redis CPU and commands)
 *   --callback-delay-ms 5    the sandbox's callback delay
 *   --log-level info         the services' LOG_LEVEL (their output is read and dropped)
 *   --drain-max 60           seconds to wait after a step for its last webhooks
 *   --sustained-drain 5      a sustained step's last webhook arrives within this many seconds
 *   --keep-going             run every step even after one that was not sustained
 *   --bare-seconds 5         length of the bare-Koa baseline; 0 skips it (no bare-POST units)
 *   --overload R             the overload step's rate; default twice the max sustained rate
 *   --overload-seconds 60    length of the overload step
 *   --no-overload            no overload step
 *   --json FILE              also write every figure as JSON
 *   --env K=V                extra environment of every service process (repeatable)
 *   --cpu-prof DIR           the services named by --cpu-prof-services write a V8 CPU profile
 *                            into DIR/<service> when they stop (node --cpu-prof, one file per
 *                            thread, the largest is the main thread; one sample every 4 ms;
 *                            open in Chrome DevTools or speedscope). Profiling costs CPU: the
 *                            figures of a profiled run are not the service's
 *   --cpu-prof-services a,b  which services (Procfile names) to profile; default web
 *   --compare K=a,b          a setting on and off in one run: each step runs once per value, in
 *                            turn, each on a stack started afresh with it (interleaved, so that
 *                            the machine's drift touches every value alike); one `max sustained`
 *                            line per value
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { createMerchant } from '../shared/merchants/service';
import type { RedisClient } from '../shared/queues/connection';
import { createWebhook } from '../shared/webhooks/endpoints';
import { runBench } from './bench-common';
import { bare, issueKeys, receiver, signer, WARMUP } from './bench-e2e-load';
import {
  bareBaseline,
  PostgresCpu,
  runOverload,
  runStep,
  startService,
  type BareBaseline,
  type Measured,
  type OverloadResult,
  type Service,
  type StepResult,
} from './bench-e2e-measure';
import {
  say,
  sayBare,
  sayMaxSustained,
  sayOverload,
  sayOverloadStart,
  sayStack,
  sayStep,
  sayTableHeader,
  writeJson,
} from './bench-e2e-report';
import { clusterDown, clusterUp, pgbouncerPidFile, topologyAt, topologyEnv, type Topology } from './cluster';
import { createDatabase, SERVER_URL } from './lib/databases';
import { answers200, forkRole, stopAll, waitFor } from './lib/processes';
import { deleteQueueKeys, queuePrefix, startRedisServer, Teardown } from './lib/stack';
import { portOpen } from './local-services';
import { parseProcfile } from './start';

/**
 * The orchestration: options, the stack (a database, Redis, every Procfile line), the steps in
 * turn and the overload step. What is sent is bench-e2e-load.ts's, what is measured
 * bench-e2e-measure.ts's, what is printed bench-e2e-report.ts's.
 */

const ROOT = path.resolve(__dirname, '..');
/** --topology cluster: Redis on port+10 … port+15, PgBouncer on port+16 */
const CLUSTER_OFFSET = 10;
/** stopping the stack: SIGTERM, then SIGKILL for what is still running after this long */
const STOP_GRACE_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// options

interface Options {
  rates: number[];
  seconds: number;
  port: number;
  database: string;
  redisUrl: string;
  redisDb: number;
  privateRedis: boolean;
  callbackDelayMs: number;
  logLevel: string;
  drainMaxS: number;
  sustainedDrainS: number;
  keepGoing: boolean;
  keep: boolean;
  topology: 'single' | 'cluster';
  bareSeconds: number;
  /** the overload step's rate (undefined: twice the max sustained), or false: no overload step */
  overload: number | undefined | false;
  overloadSeconds: number;
  json?: string;
  env: Record<string, string>;
  compare?: { key: string; values: string[] };
  cpuProf?: { dir: string; services: string[] };
}

/** --cpu-prof-services: Procfile names, each one known. */
function profiledServices(list: string): string[] {
  const known = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8')).map((l) => l.name);
  const names = list
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !known.includes(n));
  if (!names.length || unknown.length)
    throw new Error(`--cpu-prof-services takes Procfile names (${known.join(', ')}), got ${list}`);
  return names;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      rates: { type: 'string', default: '20,100,200,300,400,500,600' },
      seconds: { type: 'string', default: '60' },
      port: { type: 'string', default: '3900' },
      database: { type: 'string', default: 'svc_bench_e2e' },
      'redis-url': { type: 'string' },
      'redis-db': { type: 'string', default: '0' },
      'private-redis': { type: 'boolean', default: false },
      'callback-delay-ms': { type: 'string', default: '5' },
      'log-level': { type: 'string', default: 'info' },
      'drain-max': { type: 'string', default: '60' },
      'sustained-drain': { type: 'string', default: '5' },
      'keep-going': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      topology: { type: 'string', default: 'single' },
      'bare-seconds': { type: 'string', default: '5' },
      overload: { type: 'string' },
      'overload-seconds': { type: 'string', default: '60' },
      'no-overload': { type: 'boolean', default: false },
      json: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      compare: { type: 'string' },
      'cpu-prof': { type: 'string' },
      'cpu-prof-services': { type: 'string', default: 'web' },
    },
  });
  const num = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number, got ${v}`);
    return n;
  };
  const positive = (name: string, v: string) => {
    const n = num(name, v);
    if (n === 0) throw new Error(`--${name} must be above 0`);
    return n;
  };
  if (!values['cpu-prof'] && process.argv.some((a) => a.startsWith('--cpu-prof-services')))
    throw new Error('--cpu-prof-services needs --cpu-prof DIR');
  const rates = values.rates.split(',').map((r) => num('rates', r.trim()));
  if (!rates.length || rates.some((r) => r <= 0)) throw new Error('--rates must be positive numbers, e.g. 100,200,300');
  if (!/^[a-z_][a-z0-9_]*$/.test(values.database)) throw new Error('--database must be a plain lowercase name');
  const port = num('port', values.port);
  const topology = values.topology;
  if (topology !== 'single' && topology !== 'cluster')
    throw new Error(`--topology takes single or cluster, got ${topology}`);
  if (topology === 'cluster' && (values['redis-url'] || values['private-redis']))
    throw new Error('--topology cluster runs a Redis Cluster of its own: no --redis-url or --private-redis');
  if (values.overload !== undefined && values['no-overload'])
    throw new Error('--overload R and --no-overload contradict each other');
  const overload = values['no-overload']
    ? false
    : values.overload === undefined
      ? undefined
      : num('overload', values.overload);
  if (overload === 0) throw new Error('--overload must be a positive rate (or --no-overload)');
  const base = new URL(values['redis-url'] || process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  if (values['private-redis']) {
    base.hostname = '127.0.0.1';
    base.port = String(port + 3);
  }
  base.pathname = `/${num('redis-db', values['redis-db'])}`;
  const env: Record<string, string> = {};
  for (const kv of values.env) {
    const i = kv.indexOf('=');
    if (i < 1) throw new Error(`--env takes KEY=VALUE, got ${kv}`);
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  let compare: Options['compare'];
  if (values.compare) {
    const m = /^([A-Z0-9_]+)=(.+)$/.exec(values.compare);
    if (!m || m[2].split(',').length < 2) throw new Error('--compare takes KEY=value1,value2[,...]');
    compare = { key: m[1], values: m[2].split(',') };
  }
  return {
    compare,
    rates,
    seconds: num('seconds', values.seconds),
    port,
    database: values.database,
    redisUrl: base.toString(),
    redisDb: num('redis-db', values['redis-db']),
    privateRedis: values['private-redis'],
    callbackDelayMs: num('callback-delay-ms', values['callback-delay-ms']),
    logLevel: values['log-level'],
    drainMaxS: num('drain-max', values['drain-max']),
    sustainedDrainS: num('sustained-drain', values['sustained-drain']),
    keepGoing: values['keep-going'],
    keep: values.keep,
    topology,
    bareSeconds: num('bare-seconds', values['bare-seconds']),
    overload,
    overloadSeconds: positive('overload-seconds', values['overload-seconds']),
    json: values.json,
    env,
    cpuProf: values['cpu-prof']
      ? { dir: path.resolve(values['cpu-prof']), services: profiledServices(values['cpu-prof-services']) }
      : undefined,
  };
}

/** node's arguments for a CPU profile of `name` (--cpu-prof, one sample every 4 ms), if it is profiled */
const cpuProfArgs = (name: string, cpuProf?: Options['cpuProf']) =>
  cpuProf?.services.includes(name)
    ? ['--cpu-prof', '--cpu-prof-interval', '4000', '--cpu-prof-dir', path.join(cpuProf.dir, name)]
    : [];

async function bench(): Promise<void> {
  const o = options();
  const topology: Topology | undefined = o.topology === 'cluster' ? topologyAt(o.port + CLUSTER_OFFSET) : undefined;
  const ports = [
    o.port,
    o.port + 1,
    o.port + 2,
    o.port + 4,
    o.port + 5,
    ...(o.privateRedis ? [o.port + 3] : []),
    ...(topology ? [...topology.redisPorts, topology.pgbouncerPort] : []),
  ];
  for (const p of ports) {
    if (await portOpen(p)) throw new Error(`port ${p} is taken: choose another --port`);
  }
  // once, whoever asks first (the end of the run, a failure, a signal): the others wait for the same
  const teardown = new Teardown().onSignals(130);

  try {
    // the bare-Koa baseline, before anything else runs
    let bareRun: BareBaseline | undefined;
    if (o.bareSeconds > 0) {
      bareRun = await bareBaseline(__filename, o.bareSeconds, teardown);
      sayBare(bareRun);
    }

    // Redis (and with --topology cluster, PgBouncer): the Redis Cluster is stopped last, whatever happened
    if (topology) {
      teardown.add(() => clusterDown(topology));
      const pgServer = new URL(SERVER_URL);
      await clusterUp(topology, { host: pgServer.hostname, port: Number(pgServer.port || 5432) });
    }
    if (o.privateRedis) {
      const rs = await startRedisServer(o.port + 3);
      teardown.add(() => stopAll([rs]));
    }
    const clusterSettings = topology ? topologyEnv(topology, o.database) : undefined;
    const redisUrl = clusterSettings?.REDIS_URL ?? o.redisUrl;
    // the bench's own connections: the queues' depths, and INFO of each server (every node of a cluster)
    const redis: RedisClient = topology
      ? new Cluster(
          topology.redisPorts.map((port) => ({ host: '127.0.0.1', port })),
          { redisOptions: { maxRetriesPerRequest: 3 } },
        )
      : new Redis(o.redisUrl, { maxRetriesPerRequest: 3 });
    const redisNodes = topology
      ? topology.redisPorts.map((port) => new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 3 }))
      : [redis as Redis];
    teardown.add(() => {
      redis.disconnect();
      if (topology) for (const n of redisNodes) n.disconnect();
    });
    // on a Redis Cluster each queue takes its own hash tag, so the prefix has none (the cluster is thrown away after)
    const prefix = topology ? queuePrefix('e2e').slice(1, -1) : queuePrefix('e2e');
    if (!topology) teardown.add(() => deleteQueueKeys(redis as Redis, prefix));

    // database: a fresh clone of the migrated template
    const database = await createDatabase(o.database, { replace: true });
    if (!o.keep) teardown.add(() => database.drop());
    // the bench's own reads go straight to Postgres; the services through PgBouncer on a cluster
    const databaseUrl = database.url;

    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      NODE_ENV: 'development',
      DATABASE_URL: clusterSettings?.DATABASE_URL ?? databaseUrl,
      REDIS_URL: redisUrl,
      ...(clusterSettings ? { DB_PREPARED_STATEMENTS: clusterSettings.DB_PREPARED_STATEMENTS } : {}),
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: o.logLevel,
      PORT: String(o.port),
      BASE_URL: `http://127.0.0.1:${o.port}`,
      SANDBOX_PROVIDER_PORT: String(o.port + 1),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${o.port + 1}`,
      SANDBOX_CALLBACK_DELAY_MS: String(o.callbackDelayMs),
      CARD_VAULT_PORT: String(o.port + 4),
      CARD_PROVIDER_PORT: String(o.port + 5),
      ...o.env,
    };
    delete env.ADMIN_PORT;
    // one web process unless the run asks for more (--env or --compare WEB_CONCURRENCY=…)
    if (!o.env.WEB_CONCURRENCY) delete env.WEB_CONCURRENCY;
    const config = loadConfig({ ...env, DATABASE_URL: databaseUrl });
    const ctx = createContext({
      role: 'worker',
      name: 'bench-e2e',
      config: { ...config, logLevel: 'silent' },
      poolMax: 2,
    });
    teardown.add(() => ctx.close());
    const setting = async (name: string) => (await ctx.db.raw(`show ${name}`)).rows[0][name] as string;
    const autovacuum = await setting('autovacuum');
    const syncCommit = await setting('synchronous_commit');
    if (autovacuum !== 'on')
      say(
        `WARNING: autovacuum is ${autovacuum} on this Postgres: the bench runs VACUUM ANALYZE between steps, but a long step still bloats`,
      );
    const logDir = mkdtempSync(path.join(os.tmpdir(), 'bench-e2e-logs-'));
    say(`service logs: ${logDir}/<process>.log`);

    // one merchant, its webhook endpoint, and enough keys for the highest rate
    const { child: receiverChild } = await forkRole(__filename, '--receiver', {
      ...process.env,
      RECEIVER_PORT: String(o.port + 2),
    });
    teardown.add(() => stopAll([receiverChild]));
    const merchant = await createMerchant(ctx.db, {
      name: 'E2E bench',
      fees: { USD: { percent_bps: 250, fixed: 10 } },
    });
    await createWebhook(ctx.db, {
      merchant_id: merchant.id,
      url: `http://127.0.0.1:${o.port + 2}/hook`,
      events: ['payment.*'],
      environment: 'test',
    });
    const keysFor = (rate: number) => issueKeys(ctx.db, merchant.id, config.secretsKeys, rate);
    const keys = await keysFor(Math.max(WARMUP.rate, ...o.rates));

    // the stack: every Procfile line (the compiled build, built again first if a source is newer), with a variant's settings on top
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--if-stale'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
    let stopping = false;
    /** the stack running, or starting: a failure or Ctrl-C while it starts stops it too */
    let stack: { services: Service[]; stop: () => Promise<void> } | undefined;
    teardown.add(() => stack?.stop());
    const startStack = async (extra: Record<string, string>) => {
      if (teardown.started) throw new Error('stopping: no stack is started'); // interrupted meanwhile
      stopping = false;
      const services = lines.map((l) =>
        startService(l.name, l.command, { ...env, ...extra }, logDir, cpuProfArgs(l.name, o.cpuProf)),
      );
      for (const s of services) {
        s.child.once('exit', (code, signal) => {
          if (!stopping) process.stderr.write(`${s.name} exited (${signal ?? code}): ${s.tail()}\n`);
        });
      }
      // SIGTERM, and SIGKILL for whatever is left after STOP_GRACE_MS (a worker whose Redis is gone never finishes closing)
      const stop = async () => {
        stopping = true;
        await stopAll(
          services.map((s) => s.child),
          'SIGTERM',
          STOP_GRACE_MS,
        );
      };
      stack = { services, stop };
      try {
        await waitFor(
          'the stack',
          async () => (await answers200(`http://127.0.0.1:${o.port}/health/ready`)) && (await portOpen(o.port + 1)),
          30_000,
        );
      } catch {
        await stop();
        stack = undefined;
        throw new Error('the stack did not start within 30 s');
      }
      return stack;
    };

    const measured: Measured = {
      port: o.port,
      db: ctx.db,
      database: o.database,
      redis,
      redisNodes,
      prefix,
      pg: new PostgresCpu(ctx.db, o.database, !!topology),
      // PgBouncer's CPU (one process), on a cluster
      pgbouncerPid: topology ? Number(readFileSync(pgbouncerPidFile(topology), 'utf8').trim()) : undefined,
      receiver: receiverChild,
      sign: signer(keys),
      drainMaxS: o.drainMaxS,
      sustainedDrainS: o.sustainedDrainS,
      bareRun,
    };

    sayStack({
      processes: lines.map((l) => l.name),
      keys: keys.length,
      callbackDelayMs: o.callbackDelayMs,
      logLevel: o.logLevel,
      autovacuum,
      syncCommit,
      env: o.env,
    });
    const pgAt = `${new URL(SERVER_URL).host}`;
    const topologyLine = topology
      ? `topology cluster: Redis Cluster of 3 masters + 3 replicas on ${topology.redisPorts[0]}-${topology.redisPorts[5]}, PgBouncer (transaction pooling, prepared statements off) on ${topology.pgbouncerPort} in front of Postgres ${pgAt}, queue prefix ${prefix}`
      : `topology single: Redis ${redisUrl}${o.privateRedis ? ' (private)' : ''}, Postgres ${pgAt}, queue prefix ${prefix}`;
    say(topologyLine);
    if (topology && o.redisDb !== 0) say(`(--redis-db ${o.redisDb} is not used: a Redis Cluster has database 0 only)`);
    if (o.compare)
      say(
        `comparing ${o.compare.key} = ${o.compare.values.join(' / ')}: each step runs once per value, in turn, on a stack started afresh with it`,
      );
    const variants = o.compare
      ? o.compare.values.map((v) => ({ label: `${o.compare!.key}=${v}`, env: { [o.compare!.key]: v } }))
      : [{ label: '', env: {} }];
    const results: (StepResult & { variant: string })[] = [];
    const width = Math.max(4, ...variants.map((v) => v.label.length));
    const redisScope = topology ? ' (summed over the masters)' : o.privateRedis ? '' : ' (whole Redis server)';
    /** a stack started afresh, warmed up: JIT, pools, credential caches, and tables of some thousand rows for the ANALYZE
     * after it, so that the first step's prepared statements do not keep plans made for empty tables */
    const freshStack = async (variantEnv: Record<string, string>) => {
      await stack?.stop();
      stack = await startStack(variantEnv);
      await runStep(measured, WARMUP.rate, WARMUP.seconds, stack.services);
      await ctx.db.raw('vacuum analyze');
      return stack;
    };
    sayTableHeader(o.compare ? width : undefined);
    const failed = new Set<string>();
    for (const rate of o.rates) {
      for (const variant of variants) {
        if (failed.has(variant.label)) continue;
        if (!stack || variants.length > 1) await freshStack(variant.env);
        const r = await runStep(measured, rate, o.seconds, stack!.services);
        results.push({ ...r, variant: variant.label });
        sayStep(r, { variant: o.compare ? variant.label : undefined, width, redisScope });
        await ctx.db.raw('vacuum analyze');
        if (!r.sustained && !o.keepGoing) failed.add(variant.label);
      }
      if (failed.size === variants.length) break;
    }
    const maxSustained = (label: string) =>
      results.filter((r) => r.variant === label && r.sustained).reduce((m, r) => Math.max(m, r.rate), 0);

    // the overload step, per variant: on the stack of the steps, or (--compare) on a fresh one
    const overloads: OverloadResult[] = [];
    if (o.overload !== false) {
      for (const variant of variants) {
        const label = variant.label ? ` (${variant.label})` : '';
        const best = maxSustained(variant.label);
        const rate = o.overload ?? 2 * best;
        if (!rate) {
          say(`\noverload step${label} skipped: no step was sustained (--overload R runs it at R/s all the same)`);
          continue;
        }
        if (variants.length > 1) await freshStack(variant.env);
        const lowest = results.filter((r) => r.variant === variant.label).reduce((a, b) => (b.rate < a.rate ? b : a));
        const rateFrom = o.overload === undefined ? `twice the max sustained ${best}/s` : '--overload';
        sayOverloadStart(variant.label, rate, o.overloadSeconds, rateFrom);
        const sign = signer(await keysFor(rate));
        const r = await runOverload(measured, {
          variant: variant.label,
          rate,
          seconds: o.overloadSeconds,
          rateFrom,
          lowest,
          services: stack!.services,
          sign,
        });
        overloads.push(r);
        sayOverload(r, label);
      }
    }

    if (o.json)
      writeJson(o.json, { options: o, topology: topologyLine, bare: bareRun ?? null, results, overload: overloads });
    sayMaxSustained(variants, maxSustained);
  } finally {
    await teardown.run();
  }
  process.exit(0);
}

runBench({ '--receiver': receiver, '--bare': bare }, bench);
