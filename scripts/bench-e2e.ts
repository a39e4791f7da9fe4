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
 * limit stays as in production). A stack starts with a warm-up of 10 s at up to 100/s (JIT,
 * pools, caches, and tables of about a thousand rows: Postgres keeps a connection's generic plan
 * until an ANALYZE, and a plan made for empty tables scans them whole as they grow), then VACUUM
 * ANALYZE. After each step the bench waits for the backlog to drain, then runs VACUUM ANALYZE on
 * its database (autovacuum is often off on development servers: the bench warns when it is).
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
 * last line is `max sustained: N/s`, the highest sustained rate.
 *
 * Options (command line):
 *   --rates 100,200,300      the steps (per second), in order
 *   --seconds 60             length of each step
 *   --port 3900              the web's port; the sandbox takes port+1, the receiver port+2,
 *                            a private Redis port+3, the card sandboxes port+4 and port+5
 *   --database svc_bench_e2e the database (dropped and cloned from the template at start,
 *                            dropped at the end unless --keep)
 *   --redis-url URL          default REDIS_URL or redis://127.0.0.1:6379, with --redis-db
 *   --redis-db 0             the Redis database index
 *   --private-redis          run a private redis-server on port+3 (exact Redis CPU and commands)
 *   --callback-delay-ms 5    the sandbox's callback delay
 *   --log-level info         the services' LOG_LEVEL (their output is read and dropped)
 *   --drain-max 60           seconds to wait after a step for its last webhooks
 *   --sustained-drain 5      a sustained step's last webhook arrives within this many seconds
 *   --keep-going             run every step even after one that was not sustained
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
import { closeSync, fstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { signRequest } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { createContext, type ServiceContext } from '../shared/context';
import { createDb } from '../shared/db/knex';
import { createMerchant, issueCredential } from '../shared/merchants/service';
import { ALL_QUEUES, queueKeyPrefix } from '../shared/queues/names';
import { createWebhook } from '../shared/webhooks/endpoints';
import { prepareTemplate, SERVER_URL } from './lib/databases';
import { nowMs, openLoop, percentile, runBench, type LoadRequest, type RequestPhases } from './bench-common';
import { parseProcfile } from './start';

const ROOT = path.resolve(__dirname, '..');
const TICK_MS = 1000 / 100; // USER_HZ: /proc times are in hundredths of a second on Linux
const PER_KEY_PER_MINUTE = 60; // under the spec's 100, with room for a step that runs late

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
        if (event.type === 'payment.succeeded') receipts.push([event.data.object.id, String(req.headers['x-service-delivery-id']), at]);
      } catch {
        /* not an event: ignored */
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen({ port: Number(process.env.RECEIVER_PORT), host: '127.0.0.1', backlog: 4096 }, () => process.send!({ ready: true }));
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'take') {
      process.send!({ receipts });
      receipts = [];
    } else process.exit(0);
  });
}

// ---------------------------------------------------------------------------------------------
// options

interface Options {
  rates: number[];
  seconds: number;
  port: number;
  database: string;
  redisUrl: string;
  privateRedis: boolean;
  callbackDelayMs: number;
  logLevel: string;
  drainMaxS: number;
  sustainedDrainS: number;
  keepGoing: boolean;
  keep: boolean;
  json?: string;
  env: Record<string, string>;
  compare?: { key: string; values: string[] };
  cpuProf?: { dir: string; services: string[] };
}

/** --cpu-prof-services: Procfile names, each one known. */
function profiledServices(list: string): string[] {
  const known = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8')).map((l) => l.name);
  const names = list.split(',').map((n) => n.trim()).filter(Boolean);
  const unknown = names.filter((n) => !known.includes(n));
  if (!names.length || unknown.length) throw new Error(`--cpu-prof-services takes Procfile names (${known.join(', ')}), got ${list}`);
  return names;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      rates: { type: 'string', default: '100,200,300,400,500,600' },
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
  if (!values['cpu-prof'] && process.argv.some((a) => a.startsWith('--cpu-prof-services'))) throw new Error('--cpu-prof-services needs --cpu-prof DIR');
  const rates = values.rates!.split(',').map((r) => num('rates', r.trim()));
  if (!rates.length || rates.some((r) => r <= 0)) throw new Error('--rates must be positive numbers, e.g. 100,200,300');
  if (!/^[a-z_][a-z0-9_]*$/.test(values.database!)) throw new Error('--database must be a plain lowercase name');
  const port = num('port', values.port!);
  const base = new URL(values['redis-url'] || process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  if (values['private-redis']) {
    base.hostname = '127.0.0.1';
    base.port = String(port + 3);
  }
  base.pathname = `/${num('redis-db', values['redis-db']!)}`;
  const env: Record<string, string> = {};
  for (const kv of values.env!) {
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
    seconds: num('seconds', values.seconds!),
    port,
    database: values.database!,
    redisUrl: base.toString(),
    privateRedis: values['private-redis']!,
    callbackDelayMs: num('callback-delay-ms', values['callback-delay-ms']!),
    logLevel: values['log-level']!,
    drainMaxS: num('drain-max', values['drain-max']!),
    sustainedDrainS: num('sustained-drain', values['sustained-drain']!),
    keepGoing: values['keep-going']!,
    keep: values.keep!,
    json: values.json,
    env,
    cpuProf: values['cpu-prof'] ? { dir: path.resolve(values['cpu-prof']), services: profiledServices(values['cpu-prof-services']!) } : undefined,
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
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n').filter((l) => l.startsWith('TcpExt:'));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf('ListenOverflows') ?? -1;
  return i > 0 ? Number(values[i]) : 0;
}

/** utime + stime of a process, ms; undefined once it is gone. */
/** The share of the machine's CPU time that was busy between two readings. */
const busyShare = (a: { all: number; idle: number }, b: { all: number; idle: number }) => (b.all > a.all ? 1 - (b.idle - a.idle) / (b.all - a.all) : 0);

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
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) ms += serviceCpuMs(Number(child)) ?? 0;
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
function startService(name: string, command: string, env: Record<string, string>, logDir: string, cpuProf?: Options['cpuProf']): Service {
  const [bin, ...rest] = command.split(/\s+/);
  const profile = cpuProf?.services.includes(name)
    ? ['--cpu-prof', '--cpu-prof-interval', '4000', '--cpu-prof-dir', path.join(cpuProf.dir, name)]
    : [];
  const args = [...profile, ...rest];
  if (bin !== 'node') throw new Error(`Procfile line ${name}: only node commands are run by the bench`);
  const logFile = path.join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...env, PROCESS_NAME: name }, stdio: ['ignore', fd, fd] });
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

/** Postgres backends of the database (by application_name = process name) and Postgres' own processes, with their CPU. */
class PostgresCpu {
  private seen = new Map<number, { group: string; first: number; last: number }>();
  constructor(
    private readonly db: ServiceContext['db'],
    private readonly database: string,
  ) {}

  async sample(): Promise<void> {
    const { rows } = await this.db.raw(
      `select pid, application_name, backend_type, datname from pg_stat_activity where datname = ? or (datname is null and backend_type <> 'client backend')`,
      [this.database],
    );
    for (const r of rows as { pid: number; application_name: string; backend_type: string; datname: string | null }[]) {
      const cpu = cpuMs(r.pid);
      if (cpu === undefined) continue;
      const group = r.datname === null ? 'postgres (server processes)' : `postgres ← ${r.application_name || '?'}`;
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

async function redisCpuMs(redis: Redis): Promise<{ cpu: number; commands: number; byCommand: Map<string, number> }> {
  const info = await redis.info('everything');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  // commands run inside scripts (BullMQ's Lua) count as themselves, and the script call once more
  const byCommand = new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1], Number(m[2])]));
  return { cpu: (field('used_cpu_sys') + field('used_cpu_user')) * 1000, commands: field('total_commands_processed'), byCommand };
}

/** Jobs waiting (or delayed, or being worked on) per queue: the backlog behind the API. */
async function queueDepths(redis: Redis, prefix: string): Promise<Record<string, number>> {
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
  /** commits and rollbacks on the database (a statement outside a transaction is one) */
  pgTransactionsPerPayment: number;
  redisCommandsPerPayment: number;
  redisTopCommands: [string, number][];
  depths: { t: number; depths: Record<string, number> }[];
  load: string;
  /** the machine's busy share over the step and its drain (/proc/stat: 1 - idle and iowait time over all time) */
  busy: number;
}

async function bench(): Promise<void> {
  const o = options();
  const say = (line: string) => process.stdout.write(`${line}\n`);
  for (const p of [o.port, o.port + 1, o.port + 2, o.port + 4, o.port + 5, ...(o.privateRedis ? [o.port + 3] : [])]) {
    if (!(await portFree(p))) throw new Error(`port ${p} is taken: choose another --port`);
  }
  const cleanups: (() => Promise<unknown> | void)[] = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  process.on('SIGINT', () => void cleanup().finally(() => process.exit(130)));

  try {
    // Redis
    if (o.privateRedis) {
      const rs = spawn('redis-server', ['--port', String(o.port + 3), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      cleanups.push(() => void rs.kill('SIGTERM'));
      for (let i = 0; i < 50 && (await portFree(o.port + 3)); i++) await sleep(100);
    }
    const redis = new Redis(o.redisUrl, { maxRetriesPerRequest: 3 });
    cleanups.push(() => redis.disconnect());
    const prefix = `{e2e${randomBytes(3).toString('hex')}}`;
    cleanups.push(async () => {
      const keys = await redis.keys(`${prefix}:*`);
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    });

    // database: a fresh clone of the migrated template
    const template = await prepareTemplate();
    const admin = createDb(`${SERVER_URL}/postgres`, 1);
    await admin.raw('drop database if exists ?? with (force)', [o.database]);
    await admin.raw('create database ?? template ??', [o.database, template]);
    if (!o.keep) cleanups.push(() => admin.raw('drop database if exists ?? with (force)', [o.database]));
    cleanups.push(() => admin.destroy());
    const autovacuum = (await admin.raw('show autovacuum')).rows[0].autovacuum;
    const syncCommit = (await admin.raw('show synchronous_commit')).rows[0].synchronous_commit;
    if (autovacuum !== 'on') say(`WARNING: autovacuum is ${autovacuum} on this Postgres: the bench runs VACUUM ANALYZE between steps, but a long step still bloats`);
    const databaseUrl = `${SERVER_URL}/${o.database}`;
    const logDir = mkdtempSync(path.join(os.tmpdir(), 'bench-e2e-logs-'));
    say(`service logs: ${logDir}/<process>.log`);

    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      REDIS_URL: o.redisUrl,
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
    const config = loadConfig(env);
    const ctx = createContext({ role: 'worker', name: 'bench-e2e', config: { ...config, logLevel: 'silent' }, poolMax: 2 });
    cleanups.push(() => ctx.close());

    // one merchant, its webhook endpoint, and enough keys for the highest rate
    const receiverChild = fork(__filename, ['--receiver'], { env: { ...process.env, RECEIVER_PORT: String(o.port + 2) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    cleanups.push(() => void receiverChild.kill('SIGTERM'));
    await new Promise((r) => receiverChild.once('message', r));
    const merchant = await createMerchant(ctx.db, { name: 'E2E bench', fees: { USD: { percent_bps: 250, fixed: 10 } } });
    await createWebhook(ctx.db, { merchant_id: merchant.id, url: `http://127.0.0.1:${o.port + 2}/hook`, events: ['payment.*'], environment: 'test' });
    const keyCount = Math.ceil((Math.max(...o.rates) * 60) / PER_KEY_PER_MINUTE);
    const keys: { apiKey: string; secret: string }[] = [];
    for (let i = 0; i < keyCount; i++) {
      const c = await issueCredential(ctx.db, merchant.id, { environment: 'test', scope: 'payments' }, config.secretsKeys);
      keys.push({ apiKey: c.api_key, secret: c.secret });
    }

    // the stack: every Procfile line (the compiled build, built again first if a source is newer), with a variant's settings on top
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
    const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
    let stopping = false;
    const startStack = async (extra: Record<string, string>) => {
      stopping = false;
      const services = lines.map((l) => startService(l.name, l.command, { ...env, ...extra }, logDir, o.cpuProf));
      for (const s of services) {
        s.child.once('exit', (code, signal) => {
          if (!stopping) process.stderr.write(`${s.name} exited (${signal ?? code}): ${s.tail()}\n`);
        });
      }
      const stop = async () => {
        stopping = true;
        for (const s of services) if (s.child.exitCode === null) s.child.kill('SIGTERM');
        await Promise.all(services.map((s) => (s.child.exitCode !== null ? undefined : new Promise((r) => s.child.once('exit', r)))));
      };
      for (let i = 0; ; i++) {
        const up = await new Promise<boolean>((resolve) => {
          http.get(`http://127.0.0.1:${o.port}/health/ready`, (res) => (res.resume(), resolve(res.statusCode === 200))).on('error', () => resolve(false));
        });
        if (up && !(await portFree(o.port + 1))) break;
        if (i > 300) {
          await stop();
          throw new Error('the stack did not start within 30 s');
        }
        await sleep(100);
      }
      return { services, stop };
    };
    let stack: Awaited<ReturnType<typeof startStack>> | undefined;
    cleanups.push(() => stack?.stop());

    // a signed payment, round-robin over the keys
    let k = 0;
    const payment = (): LoadRequest => {
      const key = keys[k++ % keys.length];
      const ts = String(Math.floor(Date.now() / 1000));
      const body = JSON.stringify({ amount: 10_000, currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: '243990000001', reference: `e2e-${randomUUID()}` });
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

    const pg = new PostgresCpu(ctx.db, o.database);
    const take = () =>
      new Promise<Receipt[]>((resolve) => {
        receiverChild.once('message', (m: { receipts: Receipt[] }) => resolve(m.receipts));
        receiverChild.send({ cmd: 'take' });
      });

    const runStep = async (rate: number, seconds: number, services: Service[]): Promise<StepResult> => {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      await take(); // anything left from before
      // signed ahead of the step (X-Timestamp stays valid 300 s): signing does not take the service's CPU
      const total = Math.round(rate * seconds);
      const requests = Array.from({ length: total }, payment);
      let next = 0;
      const created = new Map<string, number>(); // payment id → when its POST left
      const statuses: Record<string, number> = {};
      const cpu0 = new Map(services.map((s) => [s.name, serviceCpuMs(s.child.pid!) ?? 0]));
      const machine0 = machineCpu();
      const self0 = process.cpuUsage();
      const rcv0 = cpuMs(receiverChild.pid!) ?? 0;
      const redis0 = await redisCpuMs(redis);
      const overflows0 = listenOverflows();
      const xacts = async () => Number((await ctx.db.raw('select xact_commit + xact_rollback as n from pg_stat_database where datname = ?', [o.database])).rows[0].n);
      const xact0 = await xacts();
      await pg.begin();
      const depths: StepResult['depths'] = [];
      const start = nowMs();
      const sampler = setInterval(() => {
        void pg.sample().catch(() => undefined);
        void queueDepths(redis, prefix).then((d) => depths.push({ t: (nowMs() - start) / 1000, depths: d }), () => undefined);
      }, 1000);
      const receipts: Receipt[] = [];
      // the load generator's own event loop: a late loop makes answers look late
      const loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      const collector = setInterval(() => void take().then((r) => receipts.push(...r)), 500);
      const run = await openLoop(o.port, {
        rate,
        seconds,
        next: () => requests[next++] ?? payment(),
        maxInFlight: 5000,
        timeoutMs: 30_000,
        onAnswer: (status, body, sentAt) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status === 201) created.set(JSON.parse(body.toString('utf8')).id, sentAt);
        },
      });
      const loadEnd = nowMs();
      loopDelay.disable();
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
        if (nowMs() - loadEnd > o.drainMaxS * 1000) break;
        await sleep(200);
      }
      const drainEnd = nowMs();
      await sleep(1000); // late duplicates
      clearInterval(collector);
      clearInterval(sampler);
      receipts.push(...(await take()));
      await pg.sample();
      const redis1 = await redisCpuMs(redis);
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
      for (const s of services) cpu[s.name] = ((serviceCpuMs(s.child.pid!) ?? cpu0.get(s.name)!) - cpu0.get(s.name)!) / n;
      for (const [group, ms] of pg.byGroup()) cpu[group] = ms / n;
      cpu['redis-server'] = (redis1.cpu - redis0.cpu) / n;
      const self = process.cpuUsage(self0);
      cpu['bench (load generator)'] = (self.user + self.system) / 1000 / n;
      cpu['bench (receiver)'] = ((cpuMs(receiverChild.pid!) ?? rcv0) - rcv0) / n;
      // backlog: jobs in every queue; growth over the step's second half
      const during = depths.filter((d) => d.t <= seconds);
      const total0 = during.filter((d) => d.t >= seconds / 2).map((d) => Object.values(d.depths).reduce((a, b) => a + b, 0));
      const backlogGrowth = total0.length >= 2 ? Math.max(...total0.slice(-3)) - Math.min(...total0.slice(0, 3)) : 0;
      const createdPerS = created.size / run.seconds;
      const webhooksPerS = inStep / ((loadEnd - start) / 1000);
      const drainS = (drainEnd - loadEnd) / 1000;
      const sustained =
        createdPerS >= rate * 0.97 && webhooksPerS >= rate * 0.95 && backlogGrowth <= rate && drained && drainS <= o.sustainedDrainS && duplicates === 0;
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

    say(`bench:e2e: ${lines.length} processes (${lines.map((l) => l.name).join(', ')}), node ${process.version}, ${keys.length} API keys, sandbox callback delay ${o.callbackDelayMs} ms, LOG_LEVEL ${o.logLevel}, autovacuum ${autovacuum}, synchronous_commit ${syncCommit}${Object.keys(o.env).length ? `, ${Object.entries(o.env).map(([a, b]) => `${a}=${b}`).join(' ')}` : ''}`);
    if (o.compare) say(`comparing ${o.compare.key} = ${o.compare.values.join(' / ')}: each step runs once per value, in turn, on a stack started afresh with it`);
    const variants = o.compare ? o.compare.values.map((v) => ({ label: `${o.compare!.key}=${v}`, env: { [o.compare!.key]: v } })) : [{ label: '', env: {} }];
    const results: (StepResult & { variant: string })[] = [];
    const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
    const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
    const width = Math.max(4, ...variants.map((v) => v.label.length));
    say(`\n${o.compare ? `${'variant'.padEnd(width)}  ` : ''}  rate  created/s  webhooks/s  POST p50  POST p99  e2e p50  e2e p99   lost  dup  drain s  backlog+  CPU ms/payment  busy  sustained  load`);
    const failed = new Set<string>();
    for (const rate of o.rates) {
      for (const variant of variants) {
        if (failed.has(variant.label)) continue;
        if (!stack || variants.length > 1) {
          await stack?.stop();
          stack = await startStack(variant.env);
          // warm-up: JIT, pools, credential caches, and tables of some thousand rows for the ANALYZE
          // below, so that the first step's prepared statements do not keep plans made for empty tables
          await runStep(Math.min(100, o.rates[0]), 10, stack.services);
          await ctx.db.raw('vacuum analyze');
        }
        const r = await runStep(rate, o.seconds, stack.services);
        results.push({ ...r, variant: variant.label });
        const cpuTotal = Object.entries(r.cpuMsPerPayment)
          .filter(([name]) => !name.startsWith('bench'))
          .reduce((sum, [, v]) => sum + v, 0);
        say(
          `${o.compare ? `${variant.label.padEnd(width)}  ` : ''}${f0(rate).padStart(6)}  ${f0(r.createdPerS).padStart(9)}  ${f0(r.webhooksPerS).padStart(10)}  ${f1(r.postP50).padStart(6)}ms  ${f1(r.postP99).padStart(6)}ms  ${f0(r.e2eP50).padStart(5)}ms  ${f0(r.e2eP99).padStart(5)}ms  ${String(r.lost).padStart(5)}  ${String(r.duplicates).padStart(3)}  ${f1(r.drainS).padStart(7)}  ${String(r.backlogGrowth).padStart(8)}  ${f1(cpuTotal).padStart(14)}  ${`${Math.round(r.busy * 100)}%`.padStart(4)}  ${(r.sustained ? 'yes' : 'NO').padStart(9)}  ${r.load}`,
        );
        if (r.errors) say(`        answers: ${JSON.stringify(r.statuses)}`);
        if (r.postSlowest) {
          const p = r.postSlowest;
          say(`        slowest 1% of POSTs (mean ms): ${f1(p.queued)} waiting for a client connection, ${f1(p.connect)} connecting, ${f1(p.write)} writing, ${f1(p.wait)} waiting for the answer, ${f1(p.read)} reading it; the load generator's event loop late by ${f1(r.benchLoopDelayMs.p99)} ms (p99), ${f1(r.benchLoopDelayMs.max)} ms (max)`);
        }
        if (r.listenOverflows) say(`        listen queues overflowed: ${r.listenOverflows} SYNs dropped (clients retry 1, 3, 7 s later)`);
        const cpuLine = Object.entries(r.cpuMsPerPayment)
          .filter(([, v]) => v >= 0.05)
          .sort((a, b) => b[1] - a[1])
          .map(([name, v]) => `${name} ${v.toFixed(2)}`)
          .join(', ');
        say(`        CPU ms per payment: ${cpuLine}; Postgres transactions per payment ${r.pgTransactionsPerPayment.toFixed(1)} (the bench's own samples included)`);
        say(`        Redis commands per payment ${r.redisCommandsPerPayment.toFixed(1)}${o.privateRedis ? '' : ' (whole Redis server)'}: ${r.redisTopCommands.map(([c, v]) => `${c} ${v.toFixed(1)}`).join(', ')}`);
        const every = Math.max(1, Math.round(r.depths.length / 12));
        const series = ALL_QUEUES.filter((q) => r.depths.some((d) => d.depths[q] > 0)).map(
          (q) => `${q} ${r.depths.filter((_, i) => i % every === 0).map((d) => d.depths[q]).join(' ')}`,
        );
        say(`        queue depths every ${every} s: ${series.length ? series.join(' | ') : 'all empty'}`);
        await ctx.db.raw('vacuum analyze');
        if (!r.sustained && !o.keepGoing) failed.add(variant.label);
      }
      if (failed.size === variants.length) break;
    }

    if (o.json) writeFileSync(o.json, JSON.stringify({ options: o, results }, null, 2));
    say('');
    for (const v of variants) {
      const best = results.filter((r) => r.variant === v.label && r.sustained).reduce((m, r) => Math.max(m, r.rate), 0);
      say(`max sustained${v.label ? ` (${v.label})` : ''}: ${best}/s`);
    }
  } finally {
    await cleanup();
  }
  process.exit(0);
}

runBench({ '--receiver': receiver }, bench);
