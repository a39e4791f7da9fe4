import { Redis, type RedisOptions } from 'ioredis';

/** Blocking connection for BullMQ workers: retries forever, never fails a command on its own. */
export function workerRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

/**
 * Fail-fast connection for the web process: when Redis is down a request gets a 503 quickly
 * instead of hanging in an offline queue.
 */
export function webRedis(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    ...extra,
  });
}
