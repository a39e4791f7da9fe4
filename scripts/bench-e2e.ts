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
 * Load: open loop (bench-common.ts: requests leave evenly spaced whatever the answers), one step
 * per rate given, each for --seconds, signed POST /v1/payments spread round-robin over enough
 * API keys of one merchant to stay under the spec's 100 requests a minute per key (the rate
 * limit stays as in production). A stack starts with a warm-up of 30 s at 100/s, whatever the
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
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { signRequest } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { createContext, type ServiceContext } from '../shared/context';
import { createDb } from '../shared/db/knex';
import { createMerchant, issueCredential } from '../shared/merchants/service';
import type { RedisClient } from '../shared/queues/connection';
import { ALL_QUEUES, queueKeyPrefix } from '../shared/queues/names';
import { createWebhook } from '../shared/webhooks/endpoints';
import { prepareTemplate, SERVER_URL } from './lib/databases';
import {
  BARE_REQUEST,
  bareKoaApp,
  closedLoop,
  nowMs,
  openLoop,
  percentile,
  runBench,
  type AnswerInfo,
  type LoadRequest,
  type RequestPhases,
} from './bench-common';
import { clusterDown, clusterUp, pgbouncerPidFile, topologyAt, topologyEnv, type Topology } from './cluster';
import { parseProcfile } from './start';

const ROOT = path.resolve(__dirname, '..');
const TICK_MS = 1000 / 100; // USER_HZ: /proc times are in hundredths of a second on Linux
/** A fresh stack's warm-up (see the header): 3,000 payments, at a rate every sitting seen sustains. */
const WARMUP = { rate: 100, seconds: 30 };
const PER_KEY_PER_MINUTE = 60; // under the spec's 100, with room for a step that runs late
/** --topology cluster: Redis on port+10 … port+15, PgBouncer on port+16 */
const CLUSTER_OFFSET = 10;
/** the bare-Koa baseline's closed loop (bench:payments' default) */
const BARE_CONNECTIONS = 32;
/** the overload step: a request unanswered this long is a timeout */
const OVERLOAD_TIMEOUT_MS = 10_000;
/** the overload step's recovery: this rate for this long, right after it */
const RECOVERY_RATE = 20;
const RECOVERY_S = 15;
/** the overload verdict's bounds */
const OVERLOAD_P99_MAX_MS = 1000;
const REFUSAL_P99_MAX_MS = 100;
const BACK_WITHIN_S = 10;
/** stopping the stack: SIGTERM, then SIGKILL for what is still running after this long */
const STOP_GRACE_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// the receiver (child process): records each delivery, answers 200 at once

type Receipt = [paymentId: string, deliveryId: string, atMs: number];

function receiver(): void {
  let receipts: Receipt[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = nowMs();
      res.writeHead(200, { 'Content-Length': '2' }).end('ok');
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (event.type === 'payment.succeeded')
          receipts.push([event.data.object.id, String(req.headers['x-service-delivery-id']), at]);
      } catch {
        /* not an event: ignored */
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen({ port: Number(process.env.RECEIVER_PORT), host: '127.0.0.1', backlog: 4096 }, () =>
    process.send!({ ready: true }),
  );
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'take') {
      process.send!({ receipts });
      receipts = [];
    } else process.exit(0);
  });
  process.on('disconnect', () => process.exit(0)); // the bench is gone
}

/** The bare-Koa baseline's app (child process): tells its port, stops when told or when the bench is gone. */
function bare(): void {
  const server = bareKoaApp().listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () =>
    process.send!({ port: (server.address() as net.AddressInfo).port }),
  );
  process.on('message', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
}

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

// ---------------------------------------------------------------------------------------------
// helpers

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(true));
  });
}

/** TcpExt ListenOverflows of the machine: SYNs dropped because a listen queue was full. */
function listenOverflows(): number {
  const lines = readFileSync('/proc/net/netstat', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('TcpExt:'));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf('ListenOverflows') ?? -1;
  return i > 0 ? Number(values[i]) : 0;
}

/** utime + stime of a process, ms; undefined once it is gone. */
/** The share of the machine's CPU time that was busy between two readings. */
const busyShare = (a: { all: number; idle: number }, b: { all: number; idle: number }) =>
  b.all > a.all ? 1 - (b.idle - a.idle) / (b.all - a.all) : 0;

/** The machine's CPU time so far, all and idle (jiffies of /proc/stat's cpu line). */
function machineCpu(): { all: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const n = fields.map(Number);
  return { all: n.reduce((a, b) => a + b, 0), idle: n[3] + (n[4] ?? 0) };
}

function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * CPU ms of a service: its process with the children it waited for, and its live descendants
 * (the web's cluster workers with WEB_CONCURRENCY > 1); undefined once it is gone.
 */
function serviceCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let ms = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * TICK_MS;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        ms += serviceCpuMs(Number(child)) ?? 0;
    }
    return ms;
  } catch {
    return undefined;
  }
}

interface Service {
  name: string;
  child: ChildProcess;
  /** the end of its log, for an error message */
  tail: () => string;
}

/**
 * A Procfile line as a child process. Its output goes to a file of `logDir`, as an operator's
 * process manager would keep it: no pipe for the bench to read, which would take the machine's
 * CPU from the service it measures.
 */
function startService(
  name: string,
  command: string,
  env: Record<string, string>,
  logDir: string,
  cpuProf?: Options['cpuProf'],
): Service {
  const [bin, ...rest] = command.split(/\s+/);
  const profile = cpuProf?.services.includes(name)
    ? ['--cpu-prof', '--cpu-prof-interval', '4000', '--cpu-prof-dir', path.join(cpuProf.dir, name)]
    : [];
  const args = [...profile, ...rest];
  if (bin !== 'node') throw new Error(`Procfile line ${name}: only node commands are run by the bench`);
  const logFile = path.join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...env, PROCESS_NAME: name },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const tail = () => {
    const f = openSync(logFile, 'r');
    try {
      const size = fstatSync(f).size;
      const end = Buffer.alloc(Math.min(size, 1500));
      readSync(f, end, 0, end.length, size - end.length);
      return end.toString('utf8');
    } finally {
      closeSync(f);
    }
  };
  return { name, child, tail };
}

/**
 * Postgres backends of the database (by application_name = process name) and Postgres' own
 * processes, with their CPU. Behind PgBouncer (`pooled`) a backend serves whichever process it is
 * handed to: every backend but the bench's own (application_name svc, straight to Postgres) is
 * one group.
 */
class PostgresCpu {
  private seen = new Map<number, { group: string; first: number; last: number }>();
  constructor(
    private readonly db: ServiceContext['db'],
    private readonly database: string,
    private readonly pooled = false,
  ) {}

  async sample(): Promise<void> {
    const { rows } = await this.db.raw(
      `select pid, application_name, backend_type, datname from pg_stat_activity where datname = ? or (datname is null and backend_type <> 'client backend')`,
      [this.database],
    );
    for (const r of rows as { pid: number; application_name: string; backend_type: string; datname: string | null }[]) {
      const cpu = cpuMs(r.pid);
      if (cpu === undefined) continue;
      const app = this.pooled && r.application_name !== 'svc' ? 'PgBouncer' : r.application_name || '?';
      const group = r.datname === null ? 'postgres (server processes)' : `postgres ← ${app}`;
      const s = this.seen.get(r.pid);
      // a backend first seen during the window counts from 0 (it was opened then); seen at the start: from its CPU then
      if (!s) this.seen.set(r.pid, { group, first: this.started ? 0 : cpu, last: cpu });
      else s.last = cpu;
    }
  }

  private started = false;
  /** Starts a window: every known backend counts from its CPU now. */
  async begin(): Promise<void> {
    this.seen.clear();
    this.started = false;
    await this.sample();
    this.started = true;
  }

  byGroup(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.seen.values()) out.set(s.group, (out.get(s.group) ?? 0) + (s.last - s.first));
    return out;
  }
}

/**
 * CPU and commands of the Redis servers: one, or every node of a Redis Cluster (CPU summed over
 * all of them, commands over the masters only: a replica replays its master's).
 */
async function redisCpuMs(nodes: Redis[]): Promise<{ cpu: number; commands: number; byCommand: Map<string, number> }> {
  const out = { cpu: 0, commands: 0, byCommand: new Map<string, number>() };
  for (const info of await Promise.all(nodes.map((n) => n.info('everything')))) {
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
    out.cpu += (field('used_cpu_sys') + field('used_cpu_user')) * 1000;
    if (nodes.length > 1 && !/^role:master/m.test(info)) continue;
    out.commands += field('total_commands_processed');
    // commands run inside scripts (BullMQ's Lua) count as themselves, and the script call once more
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      out.byCommand.set(m[1], (out.byCommand.get(m[1]) ?? 0) + Number(m[2]));
  }
  return out;
}

/** Jobs waiting (or delayed, or being worked on) per queue: the backlog behind the API. */
async function queueDepths(redis: RedisClient, prefix: string): Promise<Record<string, number>> {
  if (redis instanceof Cluster) {
    // a pipeline of a Redis Cluster stays within one slot: one per queue (its hash tag)
    const out: Record<string, number> = {};
    await Promise.all(
      ALL_QUEUES.map(async (q) => {
        const key = (part: string) => `${queueKeyPrefix(prefix, q)}:${q}:${part}`;
        const res =
          (await redis
            .pipeline()
            .llen(key('wait'))
            .llen(key('active'))
            .zcard(key('delayed'))
            .zcard(key('prioritized'))
            .exec()) ?? [];
        out[q] = res.reduce((sum, [, n]) => sum + Number(n ?? 0), 0);
      }),
    );
    return out;
  }
  const p = redis.pipeline();
  for (const q of ALL_QUEUES) {
    // a queue's keys are under its own hash tag (queueKeyPrefix)
    const key = (part: string) => `${queueKeyPrefix(prefix, q)}:${q}:${part}`;
    p.llen(key('wait'));
    p.llen(key('active'));
    p.zcard(key('delayed'));
    p.zcard(key('prioritized'));
  }
  const res = (await p.exec()) ?? [];
  const out: Record<string, number> = {};
  ALL_QUEUES.forEach((q, i) => (out[q] = res.slice(i * 4, i * 4 + 4).reduce((s, [, n]) => s + Number(n ?? 0), 0)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// the bench

interface StepResult {
  rate: number;
  seconds: number;
  created: number;
  createdPerS: number;
  errors: number;
  statuses: Record<string, number>;
  /** SYNs the kernel dropped because a listen queue was full (machine-wide, TcpExt ListenOverflows) */
  listenOverflows: number;
  webhooksPerS: number;
  postP50: number;
  postP99: number;
  /** where the slowest 1% of POSTs spent their time (bench-common RequestPhases) */
  postSlowest?: RequestPhases;
  /** the load generator's event-loop delay during the load (p99, max), ms */
  benchLoopDelayMs: { p99: number; max: number };
  e2eP50: number;
  e2eP99: number;
  lost: number;
  duplicates: number;
  drainS: number;
  backlogGrowth: number;
  sustained: boolean;
  cpuMsPerPayment: Record<string, number>;
  /** the service's CPU per payment, every process but the bench's own, ms */
  cpuTotalMsPerPayment: number;
  /** CPU per payment in bare POSTs (CPU ms per payment ÷ CPU ms per bare-Koa POST), per process and in total; absent without the baseline */
  cpuBarePostsPerPayment?: Record<string, number>;
  cpuTotalBarePostsPerPayment?: number;
  /** commits and rollbacks on the database (a statement outside a transaction is one) */
  pgTransactionsPerPayment: number;
  redisCommandsPerPayment: number;
  redisTopCommands: [string, number][];
  depths: { t: number; depths: Record<string, number> }[];
  load: string;
  /** the machine's busy share over the step and its drain (/proc/stat: 1 - idle and iowait time over all time) */
  busy: number;
}

/** What a step may do beside the plain rate steps' load (the overload step). */
interface StepExtra {
  /** signs the step's payments (its own keys); default the rate steps' keys */
  sign?: () => LoadRequest;
  /** a request unanswered this long is cut (default 30 s) */
  timeoutMs?: number;
  /** every answer of the step's load, after the step's own bookkeeping */
  onAnswer?: (status: number, body: Buffer, sentAtMs: number, latencyMs: number, info: AnswerInfo) => void;
  /** runs right after the load, before the drain; the payments it adds (`accepted`) are waited for and counted too */
  afterLoad?: (accepted: (paymentId: string, sentAtMs: number) => void) => Promise<void>;
}

/** The bare-Koa baseline: what a POST costs with nothing of the service in it, on this machine. */
interface BareBaseline {
  seconds: number;
  connections: number;
  postsPerS: number;
  cpuMsPerPost: number;
  p50: number;
  p99: number;
  errors: number;
}

/** One kind of answer of the overload step: how many, and their latency's p99 (ms). */
interface AnswerKind {
  count: number;
  p99: number;
}

interface OverloadResult {
  variant: string;
  rate: number;
  seconds: number;
  /** why this rate: --overload, or twice the max sustained */
  rateFrom: string;
  answers: {
    created: AnswerKind;
    refused: AnswerKind;
    other: AnswerKind;
    connectionErrors: AnswerKind;
    timeouts: AnswerKind;
  };
  /** the other answers' statuses and the connection errors' codes, with their counts */
  otherStatuses: Record<string, number>;
  connectionErrorCodes: Record<string, number>;
  /** p99 of every HTTP answer (connection errors and timeouts have none), ms */
  p99All: number;
  refusalsWithoutRetryAfter: number;
  refusalsWithoutCode: number;
  /** payments accepted (201) in the step and in its recovery; lost and duplicates over them all */
  accepted: { step: number; recovery: number };
  lost: number;
  duplicates: number;
  drainS: number;
  recovery: {
    rate: number;
    seconds: number;
    /** the POST p99 of the lowest rate step, and the bound (twice it) */
    referenceP99: number;
    referenceRate: number;
    bound: number;
    /** the POST p99 of the requests sent in each second of the recovery, ms */
    perSecondP99: number[];
    statuses: Record<string, number>;
    /** seconds after the step from which every second's p99 stays within the bound; null: not within the recovery */
    backAfterS: number | null;
  };
  pass: boolean;
  reasons: string[];
  /** the step's own figures (CPU per accepted payment, refusals included; Redis; queues) */
  step: StepResult;
}

/** The bare-Koa app in a child process under a closed loop: POST/s, and the child's CPU per POST (/proc). */
async function bareBaseline(seconds: number, cleanups: (() => unknown)[]): Promise<BareBaseline> {
  const child = fork(__filename, ['--bare'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((r) => child.once('exit', r));
  cleanups.push(() => void child.kill('SIGTERM'));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('exit', (code) => reject(new Error(`the bare Koa app exited (${code})`)));
    });
    const next = () => BARE_REQUEST;
    await closedLoop(port, { connections: BARE_CONNECTIONS, seconds: 1, next }); // warm-up: JIT
    const cpu0 = cpuMs(child.pid!) ?? NaN;
    const run = await closedLoop(port, { connections: BARE_CONNECTIONS, seconds, next });
    const cpu1 = cpuMs(child.pid!) ?? NaN;
    if (!run.ok || !Number.isFinite(cpu1 - cpu0))
      throw new Error(`the bare Koa baseline failed: ${run.ok} answers, ${run.errors} errors`);
    return {
      seconds,
      connections: BARE_CONNECTIONS,
      postsPerS: run.ok / run.seconds,
      cpuMsPerPost: (cpu1 - cpu0) / run.ok,
      p50: percentile(run.latencies, 50),
      p99: percentile(run.latencies, 99),
      errors: run.errors,
    };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** Seconds after which every second's p99 stays within `bound` (null: the last second is not). */
function backAfter(perSecondP99: number[], bound: number): number | null {
  let from: number | null = null;
  perSecondP99.forEach((p99, i) => {
    if (!(p99 <= bound)) from = null;
    else from ??= i;
  });
  return from;
}

async function bench(): Promise<void> {
  const o = options();
  const say = (line: string) => process.stdout.write(`${line}\n`);
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
    if (!(await portFree(p))) throw new Error(`port ${p} is taken: choose another --port`);
  }
  const cleanups: (() => Promise<unknown> | void)[] = [];
  // once, whoever asks first (the end of the run, a failure, a signal): the others wait for the same
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void cleanup().finally(() => process.exit(130)));

  try {
    // the bare-Koa baseline, before anything else runs
    let bareRun: BareBaseline | undefined;
    if (o.bareSeconds > 0) {
      bareRun = await bareBaseline(o.bareSeconds, cleanups);
      say(
        `bare Koa: ${bareRun.postsPerS.toFixed(0)} POST/s, ${bareRun.cpuMsPerPost.toFixed(3)} ms CPU per POST (${BARE_CONNECTIONS} connections, ${o.bareSeconds} s; p50 ${bareRun.p50.toFixed(1)} ms, p99 ${bareRun.p99.toFixed(1)} ms)`,
      );
    }

    // Redis (and with --topology cluster, PgBouncer): the Redis Cluster is stopped last, whatever happened
    if (topology) {
      cleanups.push(() => clusterDown(topology));
      const pgServer = new URL(SERVER_URL);
      await clusterUp(topology, { host: pgServer.hostname, port: Number(pgServer.port || 5432) });
    }
    if (o.privateRedis) {
      const rs = spawn(
        'redis-server',
        ['--port', String(o.port + 3), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      cleanups.push(() => void rs.kill('SIGTERM'));
      for (let i = 0; i < 50 && (await portFree(o.port + 3)); i++) await sleep(100);
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
    cleanups.push(() => {
      redis.disconnect();
      if (topology) for (const n of redisNodes) n.disconnect();
    });
    // on a Redis Cluster each queue takes its own hash tag, so the prefix has none (the cluster is thrown away after)
    const prefix = topology ? `e2e${randomBytes(3).toString('hex')}` : `{e2e${randomBytes(3).toString('hex')}}`;
    if (!topology) {
      cleanups.push(async () => {
        const keys = await (redis as Redis).keys(`${prefix}:*`);
        for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
      });
    }

    // database: a fresh clone of the migrated template
    const template = await prepareTemplate();
    const admin = createDb(`${SERVER_URL}/postgres`, 1);
    await admin.raw('drop database if exists ?? with (force)', [o.database]);
    await admin.raw('create database ?? template ??', [o.database, template]);
    // (cleanups run last first: the drop before the pool it runs on is closed)
    cleanups.push(() => admin.destroy());
    if (!o.keep) cleanups.push(() => admin.raw('drop database if exists ?? with (force)', [o.database]));
    const autovacuum = (await admin.raw('show autovacuum')).rows[0].autovacuum;
    const syncCommit = (await admin.raw('show synchronous_commit')).rows[0].synchronous_commit;
    if (autovacuum !== 'on')
      say(
        `WARNING: autovacuum is ${autovacuum} on this Postgres: the bench runs VACUUM ANALYZE between steps, but a long step still bloats`,
      );
    // the bench's own reads go straight to Postgres; the services through PgBouncer on a cluster
    const databaseUrl = `${SERVER_URL}/${o.database}`;
    const logDir = mkdtempSync(path.join(os.tmpdir(), 'bench-e2e-logs-'));
    say(`service logs: ${logDir}/<process>.log`);

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
    cleanups.push(() => ctx.close());

    // one merchant, its webhook endpoint, and enough keys for the highest rate
    const receiverChild = fork(__filename, ['--receiver'], {
      env: { ...process.env, RECEIVER_PORT: String(o.port + 2) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    cleanups.push(() => void receiverChild.kill('SIGTERM'));
    await new Promise((r) => receiverChild.once('message', r));
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
    /** enough keys of the merchant for `rate` a second, each under PER_KEY_PER_MINUTE */
    const issueKeys = async (rate: number) => {
      const out: { apiKey: string; secret: string }[] = [];
      for (let i = 0; i < Math.ceil((rate * 60) / PER_KEY_PER_MINUTE); i++) {
        const c = await issueCredential(
          ctx.db,
          merchant.id,
          { environment: 'test', scope: 'payments' },
          config.secretsKeys,
        );
        out.push({ apiKey: c.api_key, secret: c.secret });
      }
      return out;
    };
    const keys = await issueKeys(Math.max(WARMUP.rate, ...o.rates));

    // the stack: every Procfile line (the compiled build, built again first if a source is newer), with a variant's settings on top
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--if-stale'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
    let stopping = false;
    /** the stack running, or starting: a failure or Ctrl-C while it starts stops it too */
    let stack: { services: Service[]; stop: () => Promise<void> } | undefined;
    cleanups.push(() => stack?.stop());
    const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;
    const startStack = async (extra: Record<string, string>) => {
      if (cleaning) throw new Error('stopping: no stack is started'); // interrupted meanwhile
      stopping = false;
      const services = lines.map((l) => startService(l.name, l.command, { ...env, ...extra }, logDir, o.cpuProf));
      for (const s of services) {
        s.child.once('exit', (code, signal) => {
          if (!stopping) process.stderr.write(`${s.name} exited (${signal ?? code}): ${s.tail()}\n`);
        });
      }
      // SIGTERM, and SIGKILL for whatever is left after STOP_GRACE_MS (a worker whose Redis is gone never finishes closing)
      const stop = async () => {
        stopping = true;
        const exited = Promise.all(
          services.map((s) => (running(s.child) ? new Promise((r) => s.child.once('exit', r)) : Promise.resolve())),
        );
        for (const s of services) if (running(s.child)) s.child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), STOP_GRACE_MS)));
        if ((await Promise.race([exited, late])) === 'late') {
          for (const s of services) if (running(s.child)) s.child.kill('SIGKILL');
          await exited;
        }
        clearTimeout(timer);
      };
      stack = { services, stop };
      for (let i = 0; ; i++) {
        const up = await new Promise<boolean>((resolve) => {
          http
            .get(`http://127.0.0.1:${o.port}/health/ready`, (res) => (res.resume(), resolve(res.statusCode === 200)))
            .on('error', () => resolve(false));
        });
        if (up && !(await portFree(o.port + 1))) break;
        if (i > 300) {
          await stop();
          stack = undefined;
          throw new Error('the stack did not start within 30 s');
        }
        await sleep(100);
      }
      return stack;
    };

    // a signed payment, round-robin over the keys of a pool
    const signer = (pool: typeof keys) => {
      let k = 0;
      return () => signed(pool[k++ % pool.length]);
    };
    const signed = (key: (typeof keys)[number]): LoadRequest => {
      const ts = String(Math.floor(Date.now() / 1000));
      const body = JSON.stringify({
        amount: 10_000,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `e2e-${randomUUID()}`,
      });
      return {
        method: 'POST',
        path: '/v1/payments',
        body,
        headers: {
          authorization: `Bearer ${key.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          'x-timestamp': ts,
          'x-signature': signRequest(key.secret, ts, 'POST', '/v1/payments', body),
        },
      };
    };

    const payment = signer(keys);
    const pg = new PostgresCpu(ctx.db, o.database, !!topology);
    // PgBouncer's CPU (one process), on a cluster
    const pgbouncerPid = topology ? Number(readFileSync(pgbouncerPidFile(topology), 'utf8').trim()) : undefined;
    const take = () =>
      new Promise<Receipt[]>((resolve) => {
        receiverChild.once('message', (m: { receipts: Receipt[] }) => resolve(m.receipts));
        receiverChild.send({ cmd: 'take' });
      });

    const runStep = async (
      rate: number,
      seconds: number,
      services: Service[],
      extra: StepExtra = {},
    ): Promise<StepResult> => {
      const sign = extra.sign ?? payment;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      await take(); // anything left from before
      // signed ahead of the step (X-Timestamp stays valid 300 s): signing does not take the service's CPU
      const total = Math.round(rate * seconds);
      const requests = Array.from({ length: total }, sign);
      let next = 0;
      const created = new Map<string, number>(); // payment id → when its POST left
      const statuses: Record<string, number> = {};
      const cpu0 = new Map(services.map((s) => [s.name, serviceCpuMs(s.child.pid!) ?? 0]));
      const machine0 = machineCpu();
      const self0 = process.cpuUsage();
      const rcv0 = cpuMs(receiverChild.pid!) ?? 0;
      const bouncer0 = pgbouncerPid ? (cpuMs(pgbouncerPid) ?? 0) : 0;
      const redis0 = await redisCpuMs(redisNodes);
      const overflows0 = listenOverflows();
      const xacts = async () =>
        Number(
          (
            await ctx.db.raw('select xact_commit + xact_rollback as n from pg_stat_database where datname = ?', [
              o.database,
            ])
          ).rows[0].n,
        );
      const xact0 = await xacts();
      await pg.begin();
      const depths: StepResult['depths'] = [];
      const start = nowMs();
      const sampler = setInterval(() => {
        void pg.sample().catch(() => undefined);
        void queueDepths(redis, prefix).then(
          (d) => depths.push({ t: (nowMs() - start) / 1000, depths: d }),
          () => undefined,
        );
      }, 1000);
      const receipts: Receipt[] = [];
      // the load generator's own event loop: a late loop makes answers look late
      const loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      const collector = setInterval(() => void take().then((r) => receipts.push(...r)), 500);
      const run = await openLoop(o.port, {
        rate,
        seconds,
        next: () => requests[next++] ?? sign(),
        maxInFlight: 5000,
        timeoutMs: extra.timeoutMs ?? 30_000,
        onAnswer: (status, body, sentAt, latency, info) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status === 201) created.set(JSON.parse(body.toString('utf8')).id, sentAt);
          extra.onAnswer?.(status, body, sentAt, latency, info);
        },
      });
      const loadEnd = nowMs();
      loopDelay.disable();
      await extra.afterLoad?.((id, sentAt) => created.set(id, sentAt));
      const drainFrom = nowMs();
      // drain: until every created payment's webhook arrived (or --drain-max)
      const got = () => new Set(receipts.map((r) => r[0]));
      let drained = false;
      for (;;) {
        const seen = got();
        let missing = 0;
        for (const id of created.keys()) if (!seen.has(id)) missing++;
        if (missing === 0) {
          drained = true;
          break;
        }
        if (nowMs() - drainFrom > o.drainMaxS * 1000) break;
        await sleep(200);
      }
      const drainEnd = nowMs();
      await sleep(1000); // late duplicates
      clearInterval(collector);
      clearInterval(sampler);
      receipts.push(...(await take()));
      await pg.sample();
      const redis1 = await redisCpuMs(redisNodes);
      const overflows1 = listenOverflows();
      await sleep(600); // Postgres flushes its statistics every 500 ms at most
      const xact1 = await xacts();

      // figures
      const firstReceipt = new Map<string, number>();
      let duplicates = 0;
      let inStep = 0;
      for (const [id, , at] of receipts) {
        if (!created.has(id)) continue;
        if (firstReceipt.has(id)) duplicates++;
        else {
          firstReceipt.set(id, at);
          if (at <= loadEnd) inStep++;
        }
      }
      const e2e = [...firstReceipt].map(([id, at]) => at - created.get(id)!).sort((a, b) => a - b);
      const n = created.size || 1;
      const cpu: Record<string, number> = {};
      for (const s of services)
        cpu[s.name] = ((serviceCpuMs(s.child.pid!) ?? cpu0.get(s.name)!) - cpu0.get(s.name)!) / n;
      for (const [group, ms] of pg.byGroup()) cpu[group] = ms / n;
      cpu['redis-server'] = (redis1.cpu - redis0.cpu) / n;
      if (pgbouncerPid) cpu.pgbouncer = ((cpuMs(pgbouncerPid) ?? bouncer0) - bouncer0) / n;
      const self = process.cpuUsage(self0);
      cpu['bench (load generator)'] = (self.user + self.system) / 1000 / n;
      cpu['bench (receiver)'] = ((cpuMs(receiverChild.pid!) ?? rcv0) - rcv0) / n;
      // backlog: jobs in every queue; growth over the step's second half
      const during = depths.filter((d) => d.t <= seconds);
      const total0 = during
        .filter((d) => d.t >= seconds / 2)
        .map((d) => Object.values(d.depths).reduce((a, b) => a + b, 0));
      const backlogGrowth = total0.length >= 2 ? Math.max(...total0.slice(-3)) - Math.min(...total0.slice(0, 3)) : 0;
      const createdPerS = created.size / run.seconds;
      const webhooksPerS = inStep / ((loadEnd - start) / 1000);
      const drainS = (drainEnd - drainFrom) / 1000;
      const cpuTotal = Object.entries(cpu)
        .filter(([name]) => !name.startsWith('bench'))
        .reduce((sum, [, v]) => sum + v, 0);
      const inBare = (ms: number) => ms / bareRun!.cpuMsPerPost;
      const sustained =
        createdPerS >= rate * 0.97 &&
        webhooksPerS >= rate * 0.95 &&
        backlogGrowth <= rate &&
        drained &&
        drainS <= o.sustainedDrainS &&
        duplicates === 0;
      return {
        rate,
        seconds,
        created: created.size,
        createdPerS,
        errors: total - created.size,
        statuses,
        listenOverflows: overflows1 - overflows0,
        webhooksPerS,
        postP50: percentile(run.latencies, 50),
        postP99: percentile(run.latencies, 99),
        postSlowest: run.slowest,
        benchLoopDelayMs: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
        e2eP50: percentile(e2e, 50),
        e2eP99: percentile(e2e, 99),
        lost: created.size - firstReceipt.size,
        duplicates,
        drainS,
        backlogGrowth,
        sustained,
        cpuMsPerPayment: cpu,
        cpuTotalMsPerPayment: cpuTotal,
        cpuBarePostsPerPayment: bareRun
          ? Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, inBare(ms)]))
          : undefined,
        cpuTotalBarePostsPerPayment: bareRun ? inBare(cpuTotal) : undefined,
        pgTransactionsPerPayment: (xact1 - xact0) / n,
        redisCommandsPerPayment: (redis1.commands - redis0.commands) / n,
        redisTopCommands: [...redis1.byCommand]
          .map(([c, calls]) => [c, (calls - (redis0.byCommand.get(c) ?? 0)) / n] as [string, number])
          .filter(([, v]) => v >= 0.5)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8),
        depths,
        load,
        busy: busyShare(machine0, machineCpu()),
      };
    };

    say(
      `bench:e2e: ${lines.length} processes (${lines.map((l) => l.name).join(', ')}), node ${process.version}, ${keys.length} API keys, sandbox callback delay ${o.callbackDelayMs} ms, LOG_LEVEL ${o.logLevel}, autovacuum ${autovacuum}, synchronous_commit ${syncCommit}${
        Object.keys(o.env).length
          ? `, ${Object.entries(o.env)
              .map(([a, b]) => `${a}=${b}`)
              .join(' ')}`
          : ''
      }`,
    );
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
    const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
    const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
    const width = Math.max(4, ...variants.map((v) => v.label.length));
    /** a stack started afresh, warmed up: JIT, pools, credential caches, and tables of some thousand rows for the ANALYZE
     * after it, so that the first step's prepared statements do not keep plans made for empty tables */
    const freshStack = async (variantEnv: Record<string, string>) => {
      await stack?.stop();
      stack = await startStack(variantEnv);
      await runStep(WARMUP.rate, WARMUP.seconds, stack.services);
      await ctx.db.raw('vacuum analyze');
      return stack;
    };
    say(
      `\n${o.compare ? `${'variant'.padEnd(width)}  ` : ''}  rate  created/s  webhooks/s  POST p50  POST p99  e2e p50  e2e p99   lost  dup  drain s  backlog+  CPU ms/payment  bare POSTs  busy  sustained  load`,
    );
    const failed = new Set<string>();
    for (const rate of o.rates) {
      for (const variant of variants) {
        if (failed.has(variant.label)) continue;
        if (!stack || variants.length > 1) await freshStack(variant.env);
        const r = await runStep(rate, o.seconds, stack!.services);
        results.push({ ...r, variant: variant.label });
        say(
          `${o.compare ? `${variant.label.padEnd(width)}  ` : ''}${f0(rate).padStart(6)}  ${f0(r.createdPerS).padStart(9)}  ${f0(r.webhooksPerS).padStart(10)}  ${f1(r.postP50).padStart(6)}ms  ${f1(r.postP99).padStart(6)}ms  ${f0(r.e2eP50).padStart(5)}ms  ${f0(r.e2eP99).padStart(5)}ms  ${String(r.lost).padStart(5)}  ${String(r.duplicates).padStart(3)}  ${f1(r.drainS).padStart(7)}  ${String(r.backlogGrowth).padStart(8)}  ${f1(r.cpuTotalMsPerPayment).padStart(14)}  ${f1(r.cpuTotalBarePostsPerPayment ?? NaN).padStart(10)}  ${`${Math.round(r.busy * 100)}%`.padStart(4)}  ${(r.sustained ? 'yes' : 'NO').padStart(9)}  ${r.load}`,
        );
        if (r.errors) say(`        answers: ${JSON.stringify(r.statuses)}`);
        if (r.postSlowest) {
          const p = r.postSlowest;
          say(
            `        slowest 1% of POSTs (mean ms): ${f1(p.queued)} waiting for a client connection, ${f1(p.connect)} connecting, ${f1(p.write)} writing, ${f1(p.wait)} waiting for the answer, ${f1(p.read)} reading it; the load generator's event loop late by ${f1(r.benchLoopDelayMs.p99)} ms (p99), ${f1(r.benchLoopDelayMs.max)} ms (max)`,
          );
        }
        if (r.listenOverflows)
          say(`        listen queues overflowed: ${r.listenOverflows} SYNs dropped (clients retry 1, 3, 7 s later)`);
        sayCpu(r, 'payment');
        say(
          `        Redis commands per payment ${r.redisCommandsPerPayment.toFixed(1)}${topology ? ' (summed over the masters)' : o.privateRedis ? '' : ' (whole Redis server)'}: ${r.redisTopCommands.map(([c, v]) => `${c} ${v.toFixed(1)}`).join(', ')}`,
        );
        const every = Math.max(1, Math.round(r.depths.length / 12));
        const series = ALL_QUEUES.filter((q) => r.depths.some((d) => d.depths[q] > 0)).map(
          (q) =>
            `${q} ${r.depths
              .filter((_, i) => i % every === 0)
              .map((d) => d.depths[q])
              .join(' ')}`,
        );
        say(`        queue depths every ${every} s: ${series.length ? series.join(' | ') : 'all empty'}`);
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
        const r = await runOverload(variant.label, rate, rateFrom, lowest, stack!.services);
        overloads.push(r);
        sayOverload(r, label);
      }
    }

    if (o.json)
      writeFileSync(
        o.json,
        JSON.stringify(
          { options: o, topology: topologyLine, bare: bareRun ?? null, results, overload: overloads },
          null,
          2,
        ),
      );
    say('');
    for (const v of variants) say(`max sustained${v.label ? ` (${v.label})` : ''}: ${maxSustained(v.label)}/s`);

    /** The CPU line of a step: per process, in ms and (with the baseline) in bare POSTs. */
    function sayCpu(r: StepResult, per: string): void {
      const cpuLine = Object.entries(r.cpuMsPerPayment)
        .filter(([, v]) => v >= 0.05)
        .sort((a, b) => b[1] - a[1])
        .map(
          ([name, v]) =>
            `${name} ${v.toFixed(2)}${r.cpuBarePostsPerPayment ? ` (${r.cpuBarePostsPerPayment[name].toFixed(1)})` : ''}`,
        )
        .join(', ');
      say(
        `        CPU ms per ${per}${r.cpuBarePostsPerPayment ? ' (in bare POSTs)' : ''}: ${cpuLine}; Postgres transactions per ${per} ${r.pgTransactionsPerPayment.toFixed(1)} (the bench's own samples included)`,
      );
    }

    /**
     * The overload step at `rate` on keys of its own (each under PER_KEY_PER_MINUTE, the recovery
     * included), every request cut after OVERLOAD_TIMEOUT_MS; right after its load, the recovery at
     * RECOVERY_RATE for RECOVERY_S; then the drain, over the payments of both.
     */
    async function runOverload(
      variant: string,
      rate: number,
      rateFrom: string,
      lowest: StepResult,
      services: Service[],
    ): Promise<OverloadResult> {
      say(
        `\noverload${variant ? ` (${variant})` : ''}: ${f0(rate)}/s offered for ${o.overloadSeconds} s (${rateFrom}), open loop, requests cut after ${OVERLOAD_TIMEOUT_MS / 1000} s; then ${RECOVERY_RATE}/s for ${RECOVERY_S} s`,
      );
      const pool = await issueKeys(rate);
      const sign = signer(pool);
      const latencies = {
        created: [] as number[],
        refused: [] as number[],
        other: [] as number[],
        connectionErrors: [] as number[],
        timeouts: [] as number[],
      };
      const otherStatuses: Record<string, number> = {};
      const connectionErrorCodes: Record<string, number> = {};
      let withoutRetryAfter = 0;
      let withoutCode = 0;
      let acceptedInStep = 0;
      const recovery: { second: number; latency: number }[] = [];
      const recoveryStatuses: Record<string, number> = {};
      let acceptedInRecovery = 0;
      const step = await runStep(rate, o.overloadSeconds, services, {
        sign,
        timeoutMs: OVERLOAD_TIMEOUT_MS,
        onAnswer: (status, body, _sentAt, latency, info) => {
          if (status === 201) {
            latencies.created.push(latency);
            acceptedInStep++;
          } else if (status === 503) {
            latencies.refused.push(latency);
            if (!/^\d+$/.test(String(info.headers?.['retry-after'] ?? ''))) withoutRetryAfter++;
            let code: unknown;
            try {
              code = JSON.parse(body.toString('utf8'))?.error?.code;
            } catch {
              // not JSON: no code
            }
            if (code !== 'service-unavailable') withoutCode++;
          } else if (status > 0) {
            latencies.other.push(latency);
            otherStatuses[status] = (otherStatuses[status] ?? 0) + 1;
          } else if (info.error === 'timeout') latencies.timeouts.push(latency);
          else {
            latencies.connectionErrors.push(latency);
            connectionErrorCodes[info.error ?? '?'] = (connectionErrorCodes[info.error ?? '?'] ?? 0) + 1;
          }
        },
        afterLoad: async (accepted) => {
          // signed now (a few ms), so that a long step does not outlast their X-Timestamp
          const recoveryRequests = Array.from({ length: RECOVERY_RATE * RECOVERY_S }, sign);
          const start = nowMs();
          let i = 0;
          await openLoop(o.port, {
            rate: RECOVERY_RATE,
            seconds: RECOVERY_S,
            next: () => recoveryRequests[i++] ?? sign(),
            maxInFlight: 5000,
            timeoutMs: OVERLOAD_TIMEOUT_MS,
            onAnswer: (status, body, sentAt, latency, info) => {
              const key = status || (info.error === 'timeout' ? 'timeout' : 'connection error');
              recoveryStatuses[key] = (recoveryStatuses[key] ?? 0) + 1;
              recovery.push({ second: Math.floor((sentAt - start) / 1000), latency });
              if (status === 201) {
                accepted(JSON.parse(body.toString('utf8')).id, sentAt);
                acceptedInRecovery++;
              }
            },
          });
        },
      });
      const kind = (l: number[]): AnswerKind => ({
        count: l.length,
        p99: percentile(
          l.sort((a, b) => a - b),
          99,
        ),
      });
      const answers = {
        created: kind(latencies.created),
        refused: kind(latencies.refused),
        other: kind(latencies.other),
        connectionErrors: kind(latencies.connectionErrors),
        timeouts: kind(latencies.timeouts),
      };
      const p99All = percentile(
        [...latencies.created, ...latencies.refused, ...latencies.other].sort((a, b) => a - b),
        99,
      );
      const perSecondP99 = Array.from({ length: RECOVERY_S }, (_, second) =>
        percentile(
          recovery
            .filter((a) => a.second === second)
            .map((a) => a.latency)
            .sort((a, b) => a - b),
          99,
        ),
      );
      const bound = 2 * lowest.postP99;
      const back = backAfter(perSecondP99, bound);
      const reasons: string[] = [];
      if (answers.connectionErrors.count) reasons.push(`${answers.connectionErrors.count} connection errors`);
      if (answers.timeouts.count) reasons.push(`${answers.timeouts.count} timeouts`);
      if (p99All > OVERLOAD_P99_MAX_MS) reasons.push(`p99 of all answers ${f0(p99All)} ms > ${OVERLOAD_P99_MAX_MS} ms`);
      if (answers.refused.p99 > REFUSAL_P99_MAX_MS)
        reasons.push(`p99 of 503s ${f0(answers.refused.p99)} ms > ${REFUSAL_P99_MAX_MS} ms`);
      if (step.lost) reasons.push(`${step.lost} lost`);
      if (step.duplicates) reasons.push(`${step.duplicates} duplicates`);
      if (back === null) reasons.push(`not back to normal latency within ${RECOVERY_S} s`);
      else if (back > BACK_WITHIN_S) reasons.push(`back to normal latency after ${back} s > ${BACK_WITHIN_S} s`);
      await ctx.db.raw('vacuum analyze');
      return {
        variant,
        rate,
        seconds: o.overloadSeconds,
        rateFrom,
        answers,
        otherStatuses,
        connectionErrorCodes,
        p99All,
        refusalsWithoutRetryAfter: withoutRetryAfter,
        refusalsWithoutCode: withoutCode,
        accepted: { step: acceptedInStep, recovery: acceptedInRecovery },
        lost: step.lost,
        duplicates: step.duplicates,
        drainS: step.drainS,
        recovery: {
          rate: RECOVERY_RATE,
          seconds: RECOVERY_S,
          referenceP99: lowest.postP99,
          referenceRate: lowest.rate,
          bound,
          perSecondP99,
          statuses: recoveryStatuses,
          backAfterS: back,
        },
        pass: reasons.length === 0,
        reasons,
        step,
      };
    }

    function sayOverload(r: OverloadResult, label: string): void {
      const row = (name: string, k: AnswerKind, detail = '') =>
        say(
          `        ${name.padEnd(18)} ${String(k.count).padStart(7)}  ${k.count ? `${f1(k.p99).padStart(8)} ms` : '       -   '}${detail}`,
        );
      const counts = (c: Record<string, number>) =>
        Object.entries(c)
          .map(([k, n]) => `${k} ×${n}`)
          .join(', ');
      say(`        ${'answers'.padEnd(18)} ${'count'.padStart(7)}  ${'p99'.padStart(8)}`);
      row('201 created', r.answers.created);
      row('503 refused', r.answers.refused);
      row('other', r.answers.other, r.answers.other.count ? `   (${counts(r.otherStatuses)})` : '');
      row(
        'connection errors',
        r.answers.connectionErrors,
        r.answers.connectionErrors.count ? `   (${counts(r.connectionErrorCodes)})` : '',
      );
      row(`timeouts (${OVERLOAD_TIMEOUT_MS / 1000} s)`, r.answers.timeouts);
      const all = r.answers.created.count + r.answers.refused.count + r.answers.other.count;
      say(`        ${'all answers'.padEnd(18)} ${String(all).padStart(7)}  ${f1(r.p99All).padStart(8)} ms`);
      const refused = r.answers.refused.count;
      say(
        refused === 0
          ? '        503s: none'
          : r.refusalsWithoutRetryAfter === 0 && r.refusalsWithoutCode === 0
            ? `        503s: every one of the ${refused} with Retry-After and the code service-unavailable`
            : `        503s: ${r.refusalsWithoutRetryAfter} of ${refused} without Retry-After (whole seconds), ${r.refusalsWithoutCode} without the code service-unavailable`,
      );
      say(
        `        accepted ${r.accepted.step + r.accepted.recovery} (${r.accepted.step} in the step, ${r.accepted.recovery} in the recovery): ${r.lost} lost, ${r.duplicates} duplicates, drained ${f1(r.drainS)} s after the recovery`,
      );
      say(
        `        recovery at ${r.recovery.rate}/s: POST p99 by second (ms) ${r.recovery.perSecondP99.map(f0).join(' ')}; normal: within 2 × ${f1(r.recovery.referenceP99)} = ${f1(r.recovery.bound)} ms (POST p99 of the ${r.recovery.referenceRate}/s step); answers ${counts(r.recovery.statuses)}`,
      );
      const s = r.step;
      say(
        `        the step: created ${f0(r.accepted.step / r.seconds)}/s, webhooks ${f0(s.webhooksPerS)}/s, creation → webhook p50 ${f0(s.e2eP50)} ms p99 ${f0(s.e2eP99)} ms (recovery included); CPU ${f1(s.cpuTotalMsPerPayment)} ms per accepted payment${s.cpuTotalBarePostsPerPayment === undefined ? '' : ` (${f1(s.cpuTotalBarePostsPerPayment)} bare POSTs)`} over the step, its recovery and drain, refusals included; machine ${Math.round(s.busy * 100)}% busy`,
      );
      if (s.postSlowest) {
        const p = s.postSlowest;
        say(
          `        slowest 1% of the step's POSTs (mean ms): ${f1(p.queued)} waiting for a client connection, ${f1(p.connect)} connecting, ${f1(p.write)} writing, ${f1(p.wait)} waiting for the answer, ${f1(p.read)} reading it; the load generator's event loop late by ${f1(s.benchLoopDelayMs.p99)} ms (p99), ${f1(s.benchLoopDelayMs.max)} ms (max)`,
        );
      }
      say(
        r.recovery.backAfterS === null
          ? `        not back within ${RECOVERY_S} s`
          : `        back to normal latency after ${r.recovery.backAfterS} s`,
      );
      say(`overload${label}: ${r.pass ? 'PASS' : `FAIL (${r.reasons.join(', ')})`}`);
    }
  } finally {
    await cleanup();
  }
  process.exit(0);
}

runBench({ '--receiver': receiver, '--bare': bare }, bench);
