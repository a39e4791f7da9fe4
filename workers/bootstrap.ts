import { Worker, type Job, type WorkerOptions } from 'bullmq';
import { getConfig } from '../shared/config';
import { createContext, type ServiceContext } from '../shared/context';
import type { QueueName } from '../shared/queues/names';
import { workerRedis } from '../shared/queues/connection';

/**
 * The shared entry point of every worker pool: connections, concurrency from the environment
 * (`<POOL>_CONCURRENCY`, else WORKER_CONCURRENCY), a log line per failed job, periodic sweeps,
 * and a graceful shutdown on SIGTERM/SIGINT that lets the job in hand finish.
 */

export interface PoolProcessor<T> {
  queue: QueueName;
  /** Asserts the job payload (treated as unknown: older code may have queued it). */
  guard(data: unknown): T;
  process(ctx: ServiceContext, data: T, job: Job): Promise<unknown>;
  workerOptions?: Partial<WorkerOptions>;
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
  const config = getConfig();
  const concurrency = concurrencyFor(def.name, def.defaultConcurrency ?? config.workerConcurrency);
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
    worker = new Worker(
      p.queue,
      async (job) => {
        const data = p.guard(job.data);
        return p.process(ctx, data, job);
      },
      {
        connection: workerRedis(config.redisUrl),
        prefix: config.queuePrefix,
        concurrency,
        ...p.workerOptions,
      },
    );
    worker.on('failed', (job, err) => {
      log.error(
        { queue: p.queue, jobId: job?.id, jobName: job?.name, attempt: job?.attemptsMade, requestId: job?.data?.requestId, err: { message: err.message, name: err.name } },
        'job failed',
      );
    });
    worker.on('error', (err) => log.warn({ err: { message: err.message } }, 'worker error'));
    log.info({ queue: p.queue, concurrency }, 'worker pool started');
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
