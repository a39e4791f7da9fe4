import { DelayedError, UnrecoverableError, Worker, type Job, type WorkerOptions } from 'bullmq';
import { beatForSupervisor } from '../shared/heartbeat';
import { getConfig } from '../shared/config';
import { createContext, type ServiceContext } from '../shared/context';
import { checkDeployment } from '../shared/deployment';
import { batchElements, isBatch, type QueuedJob } from '../shared/queues/batch';
import type { JobData, QueueName } from '../shared/queues/names';
import { DEFAULT_JOB_OPTIONS } from '../shared/queues/registry';
import { workerRedis } from '../shared/queues/connection';
import { recordJobs } from '../shared/metrics/jobs';
import { processRegistry } from '../shared/metrics/registry';
import { serveProcessMetrics } from '../shared/metrics/server';
import { queueKeyPrefix } from '../shared/queues/names';
import { inSpan, jobTelemetry } from '../shared/tracing/spans';
import { lowerPriority, POOL_NICENESS } from './priority';

/**
 * The shared entry point of every worker pool: connections, concurrency from the environment
 * (`<POOL>_CONCURRENCY`, else WORKER_CONCURRENCY), a log line per failed job, periodic sweeps,
 * and a graceful shutdown on SIGTERM/SIGINT that lets the job in hand finish.
 */

export interface PoolProcessor<T> {
  queue: QueueName;
  /** Asserts the job payload (treated as unknown: older code may have queued it). */
  guard(data: unknown): T;
  /** Does the job's work; `later(ms)` asks for the same work to run again after a wait, spending no attempt. */
  process(ctx: ServiceContext, data: T): Promise<unknown>;
  /** default: a killed worker's job is picked up again once its lock (PAYMENT_JOB_LOCK_MS) expires */
  workerOptions?: Partial<WorkerOptions>;
}

/** What a processor returns when its work must wait (an endpoint's slot, a retry's delay). */
type Later = { later: number; reason: string };

export const later = (delayMs: number, reason: string): Later => ({ later: Math.max(1, Math.round(delayMs)), reason });

const isLater = (v: unknown): v is Later =>
  typeof v === 'object' && v !== null && typeof (v as Later).later === 'number';

/**
 * At most `size` pieces of work in flight in a process, whether they came as jobs of their own
 * or in batches (each element waits its turn): a batch runs as many at once as single jobs would
 * (the pool's concurrency), so a webhook endpoint's slots or a provider see the same load.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** A job's run: one piece of work, or each element of a batch (shared/queues/batch.ts). */
async function runJob(ctx: ServiceContext, p: PoolProcessor<unknown>, job: Job, slots: Slots): Promise<unknown> {
  if (isBatch(job.data)) return runBatch(ctx, p, job, batchElements(job.data), slots);
  const result = await slots.run(() => p.process(ctx, p.guard(job.data)));
  if (!isLater(result)) return result;
  // the same job sleeps until its next chance: no new job, and no attempt spent
  // BullMQ's delays run on the wall clock of Redis's clients
  await job.moveToDelayed(Date.now() + result.later, job.token);
  throw new DelayedError(result.reason);
}

/** First retry of an element given a job of its own: the queue's backoff. */
const RETRY_DELAY_MS = (DEFAULT_JOB_OPTIONS.backoff as { delay: number }).delay;

/**
 * The elements of a batch, together, each as the job it stands for. One that fails or must wait
 * is given a job of its own (its retries, its wait); one its guard refuses is logged and dropped,
 * as its own job would have been. If those adds fail the batch fails, and runs again.
 */
async function runBatch(
  ctx: ServiceContext,
  p: PoolProcessor<unknown>,
  job: Job,
  elements: JobData[],
  slots: Slots,
): Promise<unknown[]> {
  // each element continues its own trace (its outbox row's), linked to the batch's job
  const settled = await Promise.allSettled(
    elements.map((data) =>
      inSpan(
        `process ${p.queue} element`,
        {
          parent: data?.traceparent,
          consumer: true,
          attributes: { 'messaging.destination.name': p.queue, 'messaging.batch.message_count': elements.length },
        },
        () => slots.run(async () => p.process(ctx, p.guard(data))),
      ),
    ),
  );
  const own: QueuedJob[] = [];
  const results = settled.map((s, i) => {
    const data = elements[i];
    if (s.status === 'fulfilled') {
      if (!isLater(s.value)) return s.value;
      own.push({ jobName: job.name, data, opts: { delay: s.value.later } });
      return s.value.reason;
    }
    const err = s.reason instanceof Error ? s.reason : new Error(String(s.reason));
    const fields = {
      queue: p.queue,
      jobId: job.id,
      jobName: job.name,
      element: i,
      requestId: data?.requestId,
      err: { message: err.message, name: err.name },
    };
    if (err instanceof UnrecoverableError) {
      ctx.log.error(fields, 'job of a batch refused');
      return 'refused';
    }
    ctx.log.warn(fields, 'job of a batch failed; it is retried as a job of its own');
    own.push({ jobName: job.name, data, opts: { delay: RETRY_DELAY_MS } });
    return 'retried';
  });
  // the batch gives back its elements' work keys, so that their own jobs (and later re-drives) take them
  await ctx.queues.releaseWork(p.queue, String(job.id), elements);
  if (own.length) await ctx.queues.addMany(p.queue, own);
  return results;
}

export interface PoolLoop {
  name: string;
  intervalMs(ctx: ServiceContext): number;
  run(ctx: ServiceContext): Promise<unknown>;
}

export interface PoolDefinition {
  name: string;
  /** Jobs in flight per process unless <POOL>_CONCURRENCY says otherwise; default WORKER_CONCURRENCY. */
  defaultConcurrency?: number;
  /** the pool's processor, or a function building it once the service context exists */
  processor?: PoolProcessor<any> | ((ctx: ServiceContext) => PoolProcessor<any>);
  loops?: PoolLoop[];
}

/**
 * The purge of the log-like rows a pool owns (shared/retention.ts), every RETENTION_INTERVAL_MS:
 * `purge` gives the rows it purged per kind, logged when any.
 */
export function retentionLoop(purge: (ctx: ServiceContext) => Promise<Record<string, number>>): PoolLoop {
  return {
    name: 'retention',
    intervalMs: (ctx) => ctx.config.retentionIntervalMs,
    run: async (ctx) => {
      const purged = await purge(ctx);
      if (Object.values(purged).some((n) => n > 0))
        ctx.log.info({ purged }, 'purged log-like rows past their retention');
    },
  };
}

const MAX_POOL = 16;

export function concurrencyFor(pool: string, fallback: number, env = process.env): number {
  const raw = env[`${pool.toUpperCase().replace(/-/g, '_')}_CONCURRENCY`];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${pool.toUpperCase()}_CONCURRENCY must be a positive integer`);
  return n;
}

export async function runPool(def: PoolDefinition): Promise<void> {
  process.env.PROCESS_NAME ||= def.name;
  beatForSupervisor();
  const config = getConfig();
  await checkDeployment(config).catch((err: Error) => {
    process.stderr.write(`${def.name} refused to start: ${err.message}\n`);
    process.exit(1);
  });
  const concurrency = concurrencyFor(def.name, def.defaultConcurrency ?? config.workerConcurrency);
  const nice = lowerPriority(POOL_NICENESS);
  // a job holds at most one connection at a time; the cap keeps every pool of `npm start`
  // within Postgres's default 100 connections (scale copies with a pooler in front of Postgres)
  const poolMax = def.processor ? Math.min(concurrency, MAX_POOL) + 2 : 3;
  const ctx = createContext({ role: 'worker', name: def.name, config, poolMax });
  const { log } = ctx;
  let worker: Worker | undefined;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  let stopping = false;

  if (def.processor) {
    const p = typeof def.processor === 'function' ? def.processor(ctx) : def.processor;
    const slots = new Slots(concurrency);
    worker = new Worker(p.queue, (job) => runJob(ctx, p, job, slots), {
      connection: workerRedis(config.redisUrl),
      // with traces on (bullmq-otel), each job's run continues the trace its data carries
      telemetry: jobTelemetry(),
      prefix: queueKeyPrefix(config.queuePrefix, p.queue),
      concurrency,
      // an idle pool's blocking wait for a job: 10 s (BullMQ's ceiling for one wait), not 5, halves its idle round trips;
      // a job added meanwhile still wakes it at once, and a delayed one at its time
      drainDelay: 10,
      lockDuration: config.payments.paymentJobLockMs,
      stalledInterval: config.payments.paymentJobLockMs,
      ...p.workerOptions,
    });
    worker.on('failed', (job, err) => {
      const fields = {
        queue: p.queue,
        jobId: job?.id,
        jobName: job?.name,
        attempt: job?.attemptsMade,
        requestId: job?.data?.requestId,
      };
      log.error({ ...fields, err: { message: err.message, name: err.name } }, 'job failed');
    });
    worker.on('error', (err) => log.warn({ err: { message: err.message } }, 'worker error'));
    recordJobs(worker, p.queue);
    log.info({ queue: p.queue, concurrency, nice }, 'worker pool started');
  }

  for (const loop of def.loops ?? []) {
    const tick = () => {
      if (stopping) return;
      const run = loop
        .run(ctx)
        .catch((err) => log.error({ loop: loop.name, err: { message: err.message } }, 'periodic task failed'))
        .finally(() => {
          running.delete(run);
          if (!stopping) timers.push(setTimeout(tick, loop.intervalMs(ctx)));
        });
      running.add(run);
    };
    timers.push(setTimeout(tick, 0));
    log.info({ loop: loop.name, intervalMs: loop.intervalMs(ctx) }, 'periodic task started');
  }

  // GET /metrics on the pool's own port (METRICS_PORT_BASE + its offset, or <POOL>_METRICS_PORT)
  if (config.nodeName) processRegistry.setDefaultLabels({ node: config.nodeName });
  void serveProcessMetrics(def.name, log);

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing the job in hand');
    timers.forEach(clearTimeout);
    const done = Promise.all([worker?.close(), ...running]);
    const timedOut = await Promise.race([
      done.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), config.shutdownTimeoutMs).unref()),
    ]);
    if (timedOut) log.warn('shutdown timeout reached; unfinished jobs will be retried by another worker');
    await ctx.close().catch(() => undefined);
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
