import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { ServiceContext } from '../../shared/context';
import { createMerchant, issueCredential } from '../../shared/merchants/service';
import { portOpen, which } from '../local-services';
import { createTestDatabase } from './databases';
import { sleep } from './processes';

/**
 * The setup and teardown of every bench, drill and demo that runs the service on things of its
 * own: a database cloned from the migrated template, a queue prefix of its own on a shared Redis
 * (or a private redis-server), the environment of its processes, and the teardown that undoes it
 * all, once, whoever asks first (the end of the run, a failure, Ctrl-C).
 */

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** A queue prefix of its own (a hash tag: every key of it in one Redis Cluster slot). */
export const queuePrefix = (name: string) => `{${name}${randomBytes(3).toString('hex')}}`;

/**
 * The environment of a throwaway service: the caller's, its own database and queue prefix, the
 * rate limit and the overload guard out of the way, and `logLevel`.
 */
export function benchEnv(
  databaseUrl: string,
  logLevel = 'silent',
  prefix = queuePrefix('bench'),
): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'development',
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: prefix,
    // the bench's one merchant would otherwise stop at 100 requests a minute (refused in production)
    RATE_LIMIT_PER_MINUTE: String(1_000_000_000),
    // the saturation runs leave their jobs waiting on purpose: no overload guard
    OVERLOAD_MAX_WAITING: '0',
    OVERLOAD_MAX_WAIT_MS: '0',
    LOG_LEVEL: logLevel,
  };
}

/** Deletes the keys under `prefix` (never a flush: the Redis may be shared); `redis` is a client or a URL. */
export async function deleteQueueKeys(redis: Redis | string, prefix: string): Promise<void> {
  const client = typeof redis === 'string' ? new Redis(redis, { maxRetriesPerRequest: 3 }) : redis;
  try {
    const keys = await client.keys(`${prefix}:*`);
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  } finally {
    if (client !== redis) client.disconnect();
  }
}

/** A redis-server of the caller's own on `port`, without persistence; its output to `onOutput` (else dropped). */
export function spawnRedisServer(port: number, onOutput?: (chunk: Buffer) => void): ChildProcess {
  const child = spawn(
    which('redis-server') ?? '/usr/bin/redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', onOutput ? 'pipe' : 'ignore', onOutput ? 'pipe' : 'ignore'] },
  );
  if (onOutput) {
    child.stdout!.on('data', onOutput);
    child.stderr!.on('data', onOutput);
  }
  return child;
}

/** spawnRedisServer, resolved once it takes connections (or after 5 s). */
export async function startRedisServer(port: number, onOutput?: (chunk: Buffer) => void): Promise<ChildProcess> {
  const child = spawnRedisServer(port, onOutput);
  for (let i = 0; i < 50 && !(await portOpen(port)); i++) await sleep(100);
  return child;
}

/**
 * Steps to undo, run last added first, once: `run()` again (or from a signal meanwhile) waits for
 * the same run. A step that fails is passed over.
 */
export class Teardown {
  private readonly steps: (() => unknown)[] = [];
  private running?: Promise<void>;

  add(step: () => unknown): void {
    this.steps.push(step);
  }

  /** Whether the teardown has begun (nothing more should be started). */
  get started(): boolean {
    return this.running !== undefined;
  }

  run(): Promise<void> {
    return (this.running ??= (async () => {
      for (const step of this.steps.reverse())
        await Promise.resolve()
          .then(step)
          .catch(() => undefined);
    })());
  }

  /** Ctrl-C, SIGTERM or SIGHUP runs the teardown, then exits with `code`. */
  onSignals(code = 130): this {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
      process.on(signal, () => void this.run().finally(() => process.exit(code)));
    return this;
  }
}

export interface Stack {
  database: { name: string; url: string };
  prefix: string;
  /** the environment of the stack's processes */
  env: Record<string, string>;
  /** add what the caller starts on the stack: it is undone before the queue keys and the database */
  teardown: Teardown;
  /** stops what was added, deletes the queue keys, drops the database */
  tearDown(): Promise<void>;
}

/**
 * A throwaway service's setup: a database cloned from the migrated template, a queue prefix
 * `{<name>…}`, and the environment (benchEnv at `logLevel`, or `env`'s own for callers that pass
 * their processes nothing of their shell). Its teardown drops them again.
 */
export async function setUpStack(
  o: {
    name?: string;
    logLevel?: string;
    env?: (databaseUrl: string, prefix: string) => Record<string, string>;
  } = {},
): Promise<Stack> {
  const database = await createTestDatabase();
  const prefix = queuePrefix(o.name ?? 'bench');
  const env = o.env ? o.env(database.url, prefix) : benchEnv(database.url, o.logLevel, prefix);
  const teardown = new Teardown();
  teardown.add(() => database.drop());
  teardown.add(() => deleteQueueKeys(env.REDIS_URL || DEFAULT_REDIS_URL, prefix));
  return { database, prefix, env, teardown, tearDown: () => teardown.run() };
}

/**
 * In a child of forkRole: runs `teardown` once, on the message `{ cmd: 'stop' }` (stopRole) or when
 * the parent is gone, then exits.
 */
export function stopOnRequest(teardown: Teardown): void {
  const stop = () => void teardown.run().finally(() => process.exit(0));
  process.on('message', (m: { cmd?: string }) => m?.cmd === 'stop' && stop());
  process.on('disconnect', stop);
}

/** A merchant written straight to the stack's database, with one test credential of `scope`. */
export async function seedMerchant(
  ctx: ServiceContext,
  merchant: Parameters<typeof createMerchant>[1],
  scope: 'read' | 'payments' | 'full' = 'full',
): Promise<{ id: string; apiKey: string; secret: string }> {
  const m = await createMerchant(ctx.db, merchant);
  const c = await issueCredential(ctx.db, m.id, { environment: 'test', scope }, ctx.config.secretsKeys);
  return { id: m.id, apiKey: c.api_key, secret: c.secret };
}
