import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Cluster, type Redis } from 'ioredis';
import type { ServiceContext } from '../shared/context';
import type { RedisClient } from '../shared/queues/connection';
import { ALL_QUEUES, queueKeyPrefix } from '../shared/queues/names';
import {
  BARE_REQUEST,
  closedLoop,
  f0,
  nowMs,
  openLoop,
  percentile,
  type AnswerInfo,
  type LoadRequest,
  type RequestPhases,
} from './bench-common';
import {
  BARE_CONNECTIONS,
  OVERLOAD_TIMEOUT_MS,
  RECOVERY_RATE,
  RECOVERY_S,
  takeReceipts,
  type Receipt,
} from './bench-e2e-load';
import { forkRole, sleep, spawnLogged, stopAll } from './lib/processes';
import type { Teardown } from './lib/stack';

/**
 * bench:e2e's measurement (the figures are described in bench-e2e.ts's header): a step's load
 * with its payments followed to their webhooks, the CPU of every process (/proc), of the Postgres
 * backends serving each one and of Redis, Postgres transactions, Redis commands, queue depths,
 * the machine's busy share; the overload step's answers, recovery and verdict.
 */

const TICK_MS = 1000 / 100; // USER_HZ: /proc times are in hundredths of a second on Linux
/** the overload verdict's bounds */
const OVERLOAD_P99_MAX_MS = 1000;
const REFUSAL_P99_MAX_MS = 100;
const BACK_WITHIN_S = 10;

/** A process of the stack (a Procfile line) whose CPU is measured. */
export interface Service {
  name: string;
  child: ChildProcess;
  /** the end of its log, for an error message */
  tail: () => string;
}

/**
 * A Procfile line as a child process, node started with `nodeArgs` first (a CPU profile, a
 * preloaded probe). Its output goes to a file of `logDir`, as an operator's process manager would
 * keep it: no pipe for the bench to read, which would take the machine's CPU from the service it
 * measures.
 */
export function startService(
  name: string,
  command: string,
  env: Record<string, string>,
  logDir: string,
  nodeArgs: string[] = [],
): Service {
  const [bin, ...rest] = command.split(/\s+/);
  if (bin !== 'node') throw new Error(`Procfile line ${name}: only node commands are run by the bench`);
  const { child, tail } = spawnLogged('node', [...nodeArgs, ...rest], {
    env: { ...env, PROCESS_NAME: name },
    logFile: path.join(logDir, `${name}.log`),
  });
  return { name, child, tail };
}

/** TcpExt ListenOverflows of the machine: SYNs dropped because a listen queue was full. */
export function listenOverflows(): number {
  const lines = readFileSync('/proc/net/netstat', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('TcpExt:'));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf('ListenOverflows') ?? -1;
  return i > 0 ? Number(values[i]) : 0;
}

/** The share of the machine's CPU time that was busy between two readings. */
export const busyShare = (a: { all: number; idle: number }, b: { all: number; idle: number }) =>
  b.all > a.all ? 1 - (b.idle - a.idle) / (b.all - a.all) : 0;

/** The machine's CPU time so far, all and idle (jiffies of /proc/stat's cpu line). */
export function machineCpu(): { all: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const n = fields.map(Number);
  return { all: n.reduce((a, b) => a + b, 0), idle: n[3] + (n[4] ?? 0) };
}

/** utime + stime of a process, ms; undefined once it is gone. */
export function cpuMs(pid: number): number | undefined {
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
export function serviceCpuMs(pid: number): number | undefined {
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

/**
 * Postgres backends of the database (by application_name = process name) and Postgres' own
 * processes, with their CPU. Behind PgBouncer (`pooled`) a backend serves whichever process it is
 * handed to: every backend but the bench's own (application_name svc, straight to Postgres) is
 * one group.
 */
export class PostgresCpu {
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
export async function redisCpuMs(
  nodes: Redis[],
): Promise<{ cpu: number; commands: number; byCommand: Map<string, number> }> {
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
export async function queueDepths(redis: RedisClient, prefix: string): Promise<Record<string, number>> {
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

export interface StepResult {
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
export interface StepExtra {
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

/** One kind of answer of the overload step: how many, and their latency's p99 (ms). */
export interface AnswerKind {
  count: number;
  p99: number;
}

export interface OverloadResult {
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

/** The bare-Koa baseline: what a POST costs with nothing of the service in it, on this machine. */
export interface BareBaseline {
  seconds: number;
  connections: number;
  postsPerS: number;
  cpuMsPerPost: number;
  p50: number;
  p99: number;
  errors: number;
}

/**
 * The bare-Koa app (`entry --bare`, bench-e2e-load.ts bare) in a child process under a closed
 * loop: POST/s, and the child's CPU per POST (/proc).
 */
export async function bareBaseline(entry: string, seconds: number, teardown: Teardown): Promise<BareBaseline> {
  const { child, ready } = await forkRole<{ port: number }>(entry, '--bare');
  teardown.add(() => stopAll([child]));
  try {
    const next = () => BARE_REQUEST;
    await closedLoop(ready.port, { connections: BARE_CONNECTIONS, seconds: 1, next }); // warm-up: JIT
    const cpu0 = cpuMs(child.pid!) ?? NaN;
    const run = await closedLoop(ready.port, { connections: BARE_CONNECTIONS, seconds, next });
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
    await stopAll([child]);
  }
}

/** Seconds after which every second's p99 stays within `bound` (null: the last second is not). */
export function backAfter(perSecondP99: number[], bound: number): number | null {
  let from: number | null = null;
  perSecondP99.forEach((p99, i) => {
    if (!(p99 <= bound)) from = null;
    else from ??= i;
  });
  return from;
}

/** What a step measures on, beside its load: the stack, its database, Redis and webhook receiver. */
export interface Measured {
  /** the web's port */
  port: number;
  /** the bench's own connections (straight to Postgres) */
  db: ServiceContext['db'];
  database: string;
  redis: RedisClient;
  /** every Redis server (each node of a cluster), for INFO */
  redisNodes: Redis[];
  prefix: string;
  pg: PostgresCpu;
  /** PgBouncer's process, on a cluster */
  pgbouncerPid?: number;
  /** the webhook receiver (bench-e2e-load.ts) */
  receiver: ChildProcess;
  /** the rate steps' payments */
  sign: () => LoadRequest;
  drainMaxS: number;
  sustainedDrainS: number;
  /** the bare-Koa baseline, when run: CPU in bare POSTs too */
  bareRun?: BareBaseline;
}

/**
 * One step: `rate` payments a second for `seconds`, open loop, then the drain until every created
 * payment's webhook arrived (or --drain-max); its figures over the step and its drain.
 */
export async function runStep(
  m: Measured,
  rate: number,
  seconds: number,
  services: Service[],
  extra: StepExtra = {},
): Promise<StepResult> {
  const { pg, redisNodes, pgbouncerPid, bareRun } = m;
  const take = () => takeReceipts(m.receiver);
  const sign = extra.sign ?? m.sign;
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  await take(); // anything left from before
  // each payment is signed as it leaves (X-Timestamp is valid 300 s, and a step may last an hour):
  // signing takes a few microseconds of the load generator's CPU, counted in its own figure
  const total = Math.round(rate * seconds);
  const created = new Map<string, number>(); // payment id → when its POST left
  const statuses: Record<string, number> = {};
  const cpu0 = new Map(services.map((s) => [s.name, serviceCpuMs(s.child.pid!) ?? 0]));
  const machine0 = machineCpu();
  const self0 = process.cpuUsage();
  const rcv0 = cpuMs(m.receiver.pid!) ?? 0;
  const bouncer0 = pgbouncerPid ? (cpuMs(pgbouncerPid) ?? 0) : 0;
  const redis0 = await redisCpuMs(redisNodes);
  const overflows0 = listenOverflows();
  const xacts = async () =>
    Number(
      (await m.db.raw('select xact_commit + xact_rollback as n from pg_stat_database where datname = ?', [m.database]))
        .rows[0].n,
    );
  const xact0 = await xacts();
  await pg.begin();
  const depths: StepResult['depths'] = [];
  const start = nowMs();
  const sampler = setInterval(() => {
    void pg.sample().catch(() => undefined);
    void queueDepths(m.redis, m.prefix).then(
      (d) => depths.push({ t: (nowMs() - start) / 1000, depths: d }),
      () => undefined,
    );
  }, 1000);
  const receipts: Receipt[] = [];
  // the load generator's own event loop: a late loop makes answers look late
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const collector = setInterval(() => void take().then((r) => receipts.push(...r)), 500);
  const run = await openLoop(m.port, {
    rate,
    seconds,
    next: sign,
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
    if (nowMs() - drainFrom > m.drainMaxS * 1000) break;
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
  for (const s of services) cpu[s.name] = ((serviceCpuMs(s.child.pid!) ?? cpu0.get(s.name)!) - cpu0.get(s.name)!) / n;
  for (const [group, ms] of pg.byGroup()) cpu[group] = ms / n;
  cpu['redis-server'] = (redis1.cpu - redis0.cpu) / n;
  if (pgbouncerPid) cpu.pgbouncer = ((cpuMs(pgbouncerPid) ?? bouncer0) - bouncer0) / n;
  const self = process.cpuUsage(self0);
  cpu['bench (load generator)'] = (self.user + self.system) / 1000 / n;
  cpu['bench (receiver)'] = ((cpuMs(m.receiver.pid!) ?? rcv0) - rcv0) / n;
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
    drainS <= m.sustainedDrainS &&
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
}
/**
 * The overload step at `rate` with `sign`'s payments (keys of its own, each under
 * PER_KEY_PER_MINUTE, the recovery included), every request cut after OVERLOAD_TIMEOUT_MS; right
 * after its load, the recovery at RECOVERY_RATE for RECOVERY_S; then the drain, over the payments
 * of both. `lowest`: the lowest rate step, whose POST p99 is the recovery's reference.
 */
export async function runOverload(
  m: Measured,
  o: {
    variant: string;
    rate: number;
    seconds: number;
    rateFrom: string;
    lowest: StepResult;
    services: Service[];
    sign: () => LoadRequest;
  },
): Promise<OverloadResult> {
  const { variant, rate, rateFrom, lowest, services, sign } = o;
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
  const step = await runStep(m, rate, o.seconds, services, {
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
      const start = nowMs();
      await openLoop(m.port, {
        rate: RECOVERY_RATE,
        seconds: RECOVERY_S,
        next: sign,
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
  await m.db.raw('vacuum analyze');
  return {
    variant,
    rate,
    seconds: o.seconds,
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
