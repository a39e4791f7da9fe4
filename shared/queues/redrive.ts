import { randomUUID } from 'node:crypto';
import type { Db } from '../db/knex';
import type { Logger } from '../logger';
import type { JobData, QueueName } from './names';
import type { QueueRegistry } from './registry';

/**
 * The re-drive (docs/decisions.md#faults-and-limits, Redis data lost): Postgres is the truth of open
 * work, Redis only holds its jobs. Every REDRIVE_INTERVAL_MS the outbox-relay pool asks each
 * source for its open work older than REDRIVE_GRACE_MS and adds a job for each, folded into the
 * work's live job when it has one (BullMQ deduplication on `workKey`, or a batch's hold): after a
 * flush, a restart without persistence or a failover, everything open is carried on within
 * seconds, and nothing runs twice at once. It runs on a timer of its own pool, not as a BullMQ
 * job scheduler, so the loss of Redis's data cannot take it away too.
 */

/** A piece of open work: the job that carries it on. */
export interface OpenWork {
  queue: QueueName;
  job: string;
  data: JobData;
}

/** Where one kind of open work is found in Postgres. */
export interface WorkSource {
  name: string;
  /** open work that should have been picked up before `olderThan`, oldest first, at most `limit`; `now` is the process's clock */
  find(db: Db, at: { now: number; olderThan: Date }, limit: number): Promise<OpenWork[]>;
}

/** What a pass needs: the store of open work, the queues, the clock, how old work must be to count as lost. */
export interface RedriveDeps {
  db: Db;
  queues: QueueRegistry;
  now: number;
  graceMs: number;
  log: Logger;
}

const BATCH = 1000;
const PARALLEL = 50;

/** One pass over every source; returns the jobs added per source (work that had lost its job). */
export async function redrive(deps: RedriveDeps, sources: WorkSource[]): Promise<Record<string, number>> {
  const { db, queues, now, log } = deps;
  const olderThan = new Date(now - deps.graceMs);
  const added: Record<string, number> = {};
  // the sources are read together (a few round trips at once, not one after the other), then carried on one by one
  const found = await Promise.all(sources.map((source) => source.find(db, { now, olderThan }, BATCH)));
  for (const [s, source] of sources.entries()) {
    const work = found[s];
    let n = 0;
    for (let i = 0; i < work.length; i += PARALLEL) {
      const results = await Promise.all(
        work.slice(i, i + PARALLEL).map(async (w) => {
          const jobId = `rd-${randomUUID()}`;
          // an id other than ours: the work's live job took the add
          return (await queues.addUnlessHeld(w.queue, w.job, w.data, { jobId })) === jobId;
        }),
      );
      n += results.filter(Boolean).length;
    }
    if (n) added[source.name] = n;
  }
  if (Object.keys(added).length) log.warn({ added }, 'open work without a job (Redis lost it) was given one again');
  return added;
}
