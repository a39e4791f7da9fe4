import { Queue, type JobsOptions } from 'bullmq';
import { BATCH_HOLD_MS, isBatch, type QueuedData, type QueuedJob } from './batch';
import type { RedisClient } from './connection';
import { ALL_QUEUES, queueKeyPrefix, workKey, type JobData, type QueueName } from './names';
import { jobTelemetry, jobTraceOptions, tracingOn, withTraceparent } from '../tracing/spans';

/** Default job options: bounded history so Redis never grows without end. */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
};

/** Deletes a work key only while the batch that took it still holds it. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** One BullMQ Queue per name, sharing one connection. */
export class QueueRegistry {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    readonly connection: RedisClient,
    readonly prefix: string,
  ) {}

  get(name: QueueName): Queue {
    let q = this.queues.get(name);
    if (!q) {
      // telemetry (bullmq-otel) only with traces on: each job then carries its trace context
      q = new Queue(name, {
        connection: this.connection,
        prefix: queueKeyPrefix(this.prefix, name),
        defaultJobOptions: DEFAULT_JOB_OPTIONS,
        telemetry: jobTelemetry(),
      });
      // connection errors reach callers through the failed command; the shared client logs them once
      q.on('error', () => undefined);
      this.queues.set(name, q);
    }
    return q;
  }

  /** False while the connection is down: callers that must not wait (the web) skip Redis then. */
  isReady(): boolean {
    return this.connection.status === 'ready';
  }

  all(): Queue[] {
    return ALL_QUEUES.map((n) => this.get(n));
  }

  /**
   * The queue once its connection is initialised. BullMQ keeps a failed initialisation (Redis
   * down at that moment) for the life of the Queue object, so such a queue is dropped and
   * rebuilt on the next call.
   */
  async ready(name: QueueName): Promise<Queue> {
    const q = this.get(name);
    try {
      await q.waitUntilReady();
      return q;
    } catch (err) {
      if (this.queues.get(name) === q) this.queues.delete(name);
      throw err;
    }
  }

  /**
   * Adds a job unless its piece of work already has a live one (waiting, delayed, active or
   * retrying): BullMQ's deduplication on the work's key (`workKey`), kept until that job
   * completes or fails, and recovered when Redis lost the job. Returns the id of the job that
   * does the work: the new one, or the live one the add was folded into.
   */
  async add(name: QueueName, jobName: string, data: QueuedData, opts: JobsOptions = {}): Promise<string | undefined> {
    const queue = await this.ready(name);
    // a job that carries the trace context of its outbox row is added as part of that trace
    const job = await withTraceparent(isBatch(data) ? undefined : data.traceparent, () =>
      queue.add(jobName, data, withWorkKey(name, data, opts)),
    );
    return job.id;
  }

  /**
   * `add` for work found open in Postgres (the re-drive): also folded into a batch that holds
   * the work (`holdWork`), whose id is returned. A hold is only a hint against running one piece
   * of work twice at once; every job is safe to run twice.
   */
  async addUnlessHeld(
    name: QueueName,
    jobName: string,
    data: JobData,
    opts: JobsOptions = {},
  ): Promise<string | undefined> {
    const key = workKey(name, data);
    const holder = key === undefined ? null : await this.connection.get(this.holdKey(name, key));
    return holder ?? this.add(name, jobName, data, opts);
  }

  /**
   * `add` for many jobs of one queue in one pipeline; one failure rejects the call (a re-add under
   * the same jobId is a no-op). A batch's elements first take their work's keys (`holdWork`).
   */
  async addMany(name: QueueName, jobs: QueuedJob[]): Promise<void> {
    const queue = await this.ready(name);
    const held: QueuedJob[] = [];
    for (const j of jobs) {
      if (!isBatch(j.data)) held.push(j);
      else {
        const batch = await this.holdWork(name, j.opts?.jobId ?? '', j.data.batch);
        if (batch.length) held.push({ ...j, data: { batch } });
      }
    }
    if (held.length === 1 && !isBatch(held[0].data)) {
      await this.add(name, held[0].jobName, held[0].data, held[0].opts);
      return;
    }
    const traced = tracingOn();
    const optsOf = (j: QueuedJob) => {
      const opts = withWorkKey(name, j.data, j.opts ?? {});
      return traced ? { ...opts, ...traceOptions(j.data) } : opts;
    };
    if (held.length) await queue.addBulk(held.map((j) => ({ name: j.jobName, data: j.data, opts: optsOf(j) })));
  }

  /**
   * A batch's hold on one piece of work: a key of ours (never one of BullMQ's) beside its queue's
   * keys, under the same prefix and so in the same hash slot of a Redis Cluster.
   */
  private holdKey(name: QueueName, key: string): string {
    return `${queueKeyPrefix(this.prefix, name)}:held:${key}`;
  }

  /**
   * Takes the work keys of a batch's elements for the batch (`batchJobId`), so that the re-drive
   * (`addUnlessHeld`) does not give that work a second live job while the batch holds it; an
   * element whose work another batch holds, or that has a live job of its own, is left out. Each
   * key is held for BATCH_HOLD_MS at most (a batch that dies lets its work go to the re-drive
   * then) and given back by the worker as each element finishes (`releaseWork`).
   */
  private async holdWork(name: QueueName, batchId: string, elements: JobData[]): Promise<JobData[]> {
    const keys = elements.map((e) => workKey(name, e));
    const pipeline = this.connection.pipeline();
    for (const k of keys) if (k !== undefined) pipeline.set(this.holdKey(name, k), batchId, 'PX', BATCH_HOLD_MS, 'NX');
    const answers = pipeline.length ? ((await pipeline.exec()) ?? []) : [];
    let next = 0;
    // an element without a work key (none is batched so) is kept as it is
    const held = elements.filter((_, i) => {
      if (keys[i] === undefined) return true;
      const [err, ok] = answers[next++] ?? [new Error('no answer from Redis'), null];
      if (err) throw err;
      return ok === 'OK';
    });
    // work with a live job of its own (BullMQ's deduplication, asked through its API) stays with that job
    const queue = await this.ready(name);
    const live = await Promise.all(
      held.map(async (e) => (workKey(name, e) === undefined ? null : queue.getDeduplicationJobId(workKey(name, e)!))),
    );
    if (live.some(Boolean))
      await this.releaseWork(
        name,
        batchId,
        held.filter((_, i) => live[i]),
      );
    return held.filter((_, i) => !live[i]);
  }

  /** Gives back the work keys a batch held for these elements (only where the batch still holds them). */
  async releaseWork(name: QueueName, batchId: string, elements: JobData[]): Promise<void> {
    const keys = elements.map((e) => workKey(name, e)).filter((k): k is string => k !== undefined);
    if (!keys.length) return;
    const pipeline = this.connection.pipeline();
    for (const k of keys) pipeline.eval(RELEASE, 1, this.holdKey(name, k), batchId);
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}

/**
 * The trace of each job added together in one call (traces on): its own payload's (addBulk
 * would give them all the caller's); a batch, whose elements each carry theirs, starts its own.
 */
function traceOptions(data: QueuedData): JobsOptions {
  if (isBatch(data)) return { telemetry: { omitContext: true } };
  return jobTraceOptions(data.traceparent) ?? {};
}

/** A job's options with the deduplication on its work's key (`workKey`), when its payload names one (a batch's does not). */
function withWorkKey(name: QueueName, data: QueuedData, opts: JobsOptions): JobsOptions {
  const key = isBatch(data) ? undefined : workKey(name, data);
  return key ? { deduplication: { id: key }, ...opts } : opts;
}
