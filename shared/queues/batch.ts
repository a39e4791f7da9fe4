import { UnrecoverableError, type JobsOptions } from 'bullmq';
import { workKey, type JobData, type QueueName } from './names';

/**
 * Jobs published together travel together: several jobs of one publication (outbox.ts) of one
 * queue and name, each naming one piece of work (its `workKey`) and due at once, go to Redis as
 * one BullMQ job `{ batch: [payload, ...] }` (at most BATCH_MAX). The worker runs each
 * element as the job it stands for, together (workers/bootstrap.ts), so their statements are
 * shared and BullMQ's cost (add, fetch, lock, finish, events) is paid once.
 *
 * The batch holds each element's work key while it runs, so the relay or the re-drive cannot give
 * that work a second live job meanwhile (QueueRegistry.addMany); an element whose work has a live
 * job already is left out. An element that fails or must wait gives its key back and is given a
 * job of its own, with the usual retries. If that add fails, the batch fails and runs again:
 * every element is safe to run twice.
 */

export interface BatchData {
  batch: JobData[];
}

/** A payload of one job, or of a batch. */
export type QueuedData = JobData | BatchData;

/** A job to add, as QueueRegistry.addMany takes it. */
export interface QueuedJob {
  jobName: string;
  data: QueuedData;
  opts?: JobsOptions;
}

/**
 * How long a batch holds its elements' work keys at most (shared/queues/registry.ts, holdWork):
 * the worker gives each back when its element finishes; a batch that dies lets its work go to
 * the re-drive once this has passed.
 */
export const BATCH_HOLD_MS = 300_000;

/** The most jobs published together that travel as one batch job. */
export const BATCH_MAX = 50;

/** The most elements a batch payload may hold (the guard of any pool refuses more). */
export const BATCH_LIMIT = 1000;

/** jobId of a batch: its first message's outbox id, marked apart from that message's own job. */
export const batchJobId = (firstOutboxId: string) => `obb-${firstOutboxId}`;

export function isBatch(data: unknown): data is BatchData {
  return typeof data === 'object' && data !== null && Array.isArray((data as BatchData).batch);
}

/** The elements of a batch payload, each still to pass its pool's guard. */
export function batchElements(data: BatchData): JobData[] {
  if (data.batch.length === 0 || data.batch.length > BATCH_LIMIT)
    throw new UnrecoverableError(`a batch job holds 1 to ${BATCH_LIMIT} jobs`);
  return data.batch;
}

/**
 * The jobs of one queue as they go to Redis: the batchable ones of each name in batches of at
 * most BATCH_MAX (each batch's id from its first job's id), the others (and batches of one) as
 * they are.
 */
export function inBatches(queue: QueueName, jobs: (QueuedJob & { data: JobData; id: string })[]): QueuedJob[] {
  if (jobs.length < 2) return jobs;
  const out: QueuedJob[] = [];
  const byName = new Map<string, (typeof jobs)[number][]>();
  for (const j of jobs) {
    // only a job that stands for one piece of work and runs at once may go in a batch
    if (j.opts?.delay || workKey(queue, j.data) === undefined) out.push(j);
    else byName.set(j.jobName, [...(byName.get(j.jobName) ?? []), j]);
  }
  for (const [jobName, group] of byName) {
    for (let i = 0; i < group.length; i += BATCH_MAX) {
      const chunk = group.slice(i, i + BATCH_MAX);
      out.push(
        chunk.length === 1
          ? chunk[0]
          : { jobName, data: { batch: chunk.map((j) => j.data) }, opts: { jobId: batchJobId(chunk[0].id) } },
      );
    }
  }
  return out;
}
