import type { Config } from './config';
import { createDb, WAITS, type Db } from './db/knex';
import { createLogger, type Logger } from './logger';
import { webRedis, workerRedis, type RedisClient } from './queues/connection';
import { QueueRegistry } from './queues/registry';
import { OutboxPublisher } from './queues/outbox';
import { Batches } from './db/coalescer';
import { Caches } from './ttlCache';
import { ProviderRegistry } from './providers/registry';
import { clockOf, type Clock } from './clock';
import { ProviderHealth } from './operations/health';
import { flushTraces } from './tracing/spans';

/** What every process needs: configuration, the Postgres pool, Redis, the queues and a logger. */
export interface ServiceContext {
  config: Config;
  db: Db;
  redis: RedisClient;
  queues: QueueRegistry;
  /** enqueues the outbox rows of committed transactions, and marks them in batches */
  outbox: OutboxPublisher;
  /** the process's coalescers: concurrent requests and jobs share statements (shared/db/coalescer.ts) */
  batches: Batches;
  /** the process's caches (merchant terms, operator closures, the maintenance flag, documents), each with its TTL */
  caches: Caches;
  log: Logger;
  /** built on first use (the web process learns its base URL at start) */
  readonly providers: ProviderRegistry;
  /** every provider call the kernel makes, counted for operator availability; built on first use */
  readonly providerHealth: ProviderHealth;
  clock: Clock;
  close(): Promise<void>;
}

export interface ContextOptions {
  config: Config;
  /** 'web' gets a fail-fast Redis client; workers get a blocking one. */
  role: 'web' | 'worker';
  name: string;
  poolMax?: number;
  /** default: the configuration's (the system clock; in tests, TEST_CLOCK_FILE's) */
  clock?: Clock;
}

export function createContext(opts: ContextOptions): ServiceContext {
  const { config } = opts;
  const db = createDb(config.databaseUrl, opts.poolMax, {
    preparedStatements: config.dbPreparedStatements,
    poolMin: config.dbPoolMin,
    waits: WAITS[opts.role],
  });
  const redis = opts.role === 'web' ? webRedis(config.redisUrl) : workerRedis(config.redisUrl);
  const root = createLogger(config.logLevel, opts.name);
  // every line of a process of a multi-node deployment names its node
  const log = config.nodeName ? root.child({ node: config.nodeName }) : root;
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'));
  const queues = new QueueRegistry(redis, config.queuePrefix);
  const outbox = new OutboxPublisher(db, queues, log);
  let registry: ProviderRegistry | undefined;
  let health: ProviderHealth | undefined;
  // the context's clock read at each call: a test may swap it
  const now: Clock = { now: () => context.clock.now() };
  const context: ServiceContext = {
    config,
    db,
    redis,
    queues,
    outbox,
    batches: new Batches(),
    caches: new Caches(now),
    log,
    get providers() {
      return (registry ??= new ProviderRegistry(config, log));
    },
    get providerHealth() {
      return (health ??= new ProviderHealth(db, now, config.availability.slowMs, log));
    },
    clock: opts.clock ?? clockOf(config),
    async close() {
      await health?.close().catch(() => undefined);
      registry?.close();
      await outbox.flushMarks();
      await queues.close().catch(() => undefined);
      redis.disconnect();
      await db.destroy();
      // the spans still buffered leave before the process does (nothing to do with traces off)
      await flushTraces();
    },
  };
  return context;
}
