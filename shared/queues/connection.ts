import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { clusterNodes, ConfigError } from '../config';

/** A connection to the deployment's Redis: one server, or a Redis Cluster (REDIS_URL redis-cluster://…). */
export type RedisClient = Redis | Cluster;

function connect(url: string, options: RedisOptions, cluster: Partial<ClusterOptions> = {}): RedisClient {
  if (!url.startsWith('redis-cluster://')) return new Redis(url, options);
  // every option of a node connection applies to each node; the cluster's own offline queue follows it
  return new Cluster(clusterNodes(url), {
    redisOptions: options,
    enableOfflineQueue: options.enableOfflineQueue ?? true,
    enableReadyCheck: true,
    ...cluster,
  });
}

/** Blocking connection for BullMQ workers: retries forever, never fails a command on its own. */
export function workerRedis(url: string): RedisClient {
  return connect(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

/**
 * Fail-fast connection for the web process: when Redis is down a request gets a 503 quickly
 * instead of hanging in an offline queue.
 */
export function webRedis(url: string): RedisClient {
  const retry = (times: number) => Math.min(times * 200, 2000);
  return connect(
    url,
    { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, retryStrategy: retry },
    { clusterRetryStrategy: retry },
  );
}

/**
 * Refuses a Redis Cluster URL that names a node which does not answer: a cluster given with one
 * node down is a configuration to fix, not one to run on silently (a failover would find no
 * replica there). One PING per listed node, 2 s at most each.
 */
export async function checkClusterNodes(url: string): Promise<void> {
  if (!url.startsWith('redis-cluster://')) return;
  await Promise.all(
    clusterNodes(url).map(async ({ host, port }) => {
      const node = new Redis({
        host,
        port,
        lazyConnect: true,
        connectTimeout: 2000,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        enableOfflineQueue: false,
      });
      node.on('error', () => undefined);
      try {
        await node.connect();
        await node.ping();
      } catch (err) {
        throw new ConfigError(
          `REDIS_URL lists the Redis Cluster node ${host}:${port}, which does not answer (${(err as Error).message}): start it or remove it from the list`,
        );
      } finally {
        node.disconnect();
      }
    }),
  );
}
