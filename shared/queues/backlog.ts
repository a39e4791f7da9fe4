import type { QueueRegistry } from './registry';
import { ALL_QUEUES, type QueueName } from './names';

/**
 * The backlog behind the API: per queue, the jobs waiting for a worker and how long the oldest of
 * them has waited. Jobs sleeping (delayed: a retry's backoff, a webhook waiting for its next
 * attempt) or in hand (active) are not waiting.
 */
export interface QueueBacklog {
  queue: QueueName;
  waiting: number;
  /**
   * Age of the oldest waiting job, ms; null when the queue is empty or its oldest job ran before
   * (a retry or a webhook's next attempt: BullMQ keeps no time of its return to the queue).
   */
  oldestWaitMs: number | null;
}

// BullMQ stamps its jobs with the wall clock, so their age is read against it. Asked through
// BullMQ's public API, one queue at a time (each queue's keys are in its own Redis Cluster slot).
export async function readBacklog(
  queues: QueueRegistry,
  now = Date.now(),
  names: readonly QueueName[] = ALL_QUEUES,
): Promise<QueueBacklog[]> {
  return Promise.all(
    names.map(async (queue) => {
      const q = queues.get(queue);
      // oldest first: the next job a worker takes
      const [waiting, [oldest]] = await Promise.all([q.getWaitingCount(), q.getJobs(['waiting'], 0, 0, true)]);
      const fresh = oldest && !oldest.processedOn;
      return { queue, waiting, oldestWaitMs: fresh ? Math.max(0, now - oldest.timestamp - (oldest.delay ?? 0)) : null };
    }),
  );
}
