import type { QueueRegistry } from './registry';
import { ALL_QUEUES, type QueueName } from './names';

/**
 * The backlog behind the API: per queue, the jobs waiting for a worker and how long the oldest of
 * them has waited. Jobs sleeping (delayed: a retry's backoff, a webhook waiting for its next
 * attempt) or in hand (active) are not waiting. Two round trips for every queue together.
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

// BullMQ stamps its jobs with the wall clock, so their age is read against it
export async function readBacklog(queues: QueueRegistry, now = Date.now(), names: readonly QueueName[] = ALL_QUEUES): Promise<QueueBacklog[]> {
  const redis = queues.connection;
  const heads = redis.pipeline();
  for (const name of names) {
    const wait = queues.get(name).toKey('wait');
    heads.llen(wait);
    // workers take from the right: the last element has waited longest
    heads.lindex(wait, -1);
  }
  const res = (await heads.exec()) ?? [];
  const jobs = redis.pipeline();
  const oldest: { i: number; key: string }[] = [];
  names.forEach((name, i) => {
    const id = res[i * 2 + 1]?.[1] as string | null;
    if (id) {
      const key = queues.get(name).toKey(id);
      oldest.push({ i, key });
      jobs.hmget(key, 'timestamp', 'delay', 'processedOn');
    }
  });
  const fields = oldest.length ? ((await jobs.exec()) ?? []) : [];
  const out: QueueBacklog[] = names.map((queue, i) => ({ queue, waiting: Number(res[i * 2]?.[1] ?? 0), oldestWaitMs: null }));
  oldest.forEach(({ i }, j) => {
    const [timestamp, delay, processedOn] = (fields[j]?.[1] as (string | null)[] | undefined) ?? [];
    if (!timestamp || processedOn) return;
    out[i].oldestWaitMs = Math.max(0, now - Number(timestamp) - Number(delay ?? 0));
  });
  return out;
}
