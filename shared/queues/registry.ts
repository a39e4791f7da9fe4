import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { isBatch, type QueuedData, type QueuedJob } from './batch';
import { ALL_QUEUES, workKey, type JobData, type QueueName } from './names';

/** Default job options: bounded history so Redis never grows without end. */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
};

/** One BullMQ Queue per name, sharing one connection. */
export class QueueRegistry {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    readonly connection: Redis,
    readonly prefix: string,
    /** how long rows published after commit wait to be marked enqueued together (OUTBOX_MARK_BATCH_MS; shared/queues/outbox.ts) */
    readonly markBatchMs = 100,
    /** the publications of concurrent callers go to Redis together, one pipeline (KERNEL_COALESCE; shared/queues/outbox.ts) */
    readonly publishTogether = true,
    /** at most this many jobs published together travel as one (QUEUE_BATCH_MAX; shared/queues/batch.ts); 1: each its own */
    readonly batchMax = 1,
  ) {}

  get(name: QueueName): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection, prefix: this.prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
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
    const job = await (await this.ready(name)).add(jobName, data, withWorkKey(name, data, opts));
    return job.id;
  }

  /** `add` for many jobs of one queue in one pipeline (one write, one answer); one failure rejects the call (the others may be added: a re-add under the same jobId is a no-op). */
  async addMany(name: QueueName, jobs: QueuedJob[]): Promise<void> {
    if (jobs.length === 1) {
      await this.add(name, jobs[0].jobName, jobs[0].data, jobs[0].opts);
      return;
    }
    await (await this.ready(name)).addBulk(jobs.map((j) => ({ name: j.jobName, data: j.data, opts: withWorkKey(name, j.data, j.opts ?? {}) })));
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}

/** A job's options with the deduplication on its work's key (`workKey`), when its payload names one (a batch's does not). */
function withWorkKey(name: QueueName, data: QueuedData, opts: JobsOptions): JobsOptions {
  const key = isBatch(data) ? undefined : workKey(name, data as JobData);
  return key ? { deduplication: { id: key }, ...opts } : opts;
}
