import type { ServiceContext } from '../context';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../queues/connection';

/**
 * A provider's statement callback wakes the run that waits for the statement
 * (docs/reconciliation.md#statements): the web, which receives it, publishes the statement's id on
 * Redis; the run, in whatever process, listens from before it asks for the statement, and asks
 * the statement's status again as soon as the id is announced instead of at its next poll. The
 * poll stays the fallback: a callback lost, Redis unreachable, or a provider that sends none.
 */

const channel = (ctx: Pick<ServiceContext, 'config'>, connector: string) =>
  `${ctx.config.queuePrefix}:statement-callbacks:${connector}`;

/** Ids announced before anyone waited for them, kept at most this many. */
const SEEN_MAX = 100;
/** How long to wait for the subscriber's connection before polling alone. */
const CONNECT_MS = 2000;

/** Announces that the provider says statement `statementId` changed (the web, on a verified callback). */
export async function announceStatement(
  ctx: Pick<ServiceContext, 'config' | 'redis'>,
  connector: string,
  statementId: string,
): Promise<void> {
  await ctx.redis.publish(channel(ctx, connector), statementId);
}

export interface StatementWakeups {
  /** Resolves when `statementId` is announced (or was, since listening began), else after `ms`. */
  wait(statementId: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Listens for the connector's statement callbacks; without Redis, every wait is the poll's sleep. */
export async function listenForStatements(
  ctx: Pick<ServiceContext, 'config' | 'redis' | 'log'>,
  connector: string,
): Promise<StatementWakeups> {
  const seen = new Set<string>();
  const waiters = new Map<string, () => void>();
  let sub: RedisClient | undefined;
  try {
    // a connection of its own: a subscribed connection takes no other command
    const redis = ctx.redis;
    sub = redis instanceof Cluster ? redis.duplicate() : redis.duplicate();
    const conn = sub;
    conn.on('error', () => undefined);
    if (conn.status !== 'ready')
      await Promise.race([
        new Promise<void>((resolve) => conn.once('ready', () => resolve())),
        sleep(CONNECT_MS).then(() => {
          throw new Error('no connection');
        }),
      ]);
    conn.on('message', (_channel: string, id: string) => {
      const wake = waiters.get(id);
      if (wake) return wake();
      if (seen.size >= SEEN_MAX) seen.delete(seen.values().next().value!);
      seen.add(id);
    });
    await conn.subscribe(channel(ctx, connector));
  } catch (err) {
    ctx.log.warn(
      { connector, err: { message: (err as Error).message } },
      'statement callbacks not listened for: polling alone',
    );
    sub?.disconnect();
    sub = undefined;
  }
  return {
    wait(statementId, ms) {
      if (seen.delete(statementId)) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(statementId);
          resolve();
        };
        const timer = setTimeout(done, ms);
        waiters.set(statementId, done);
      });
    },
    async close() {
      for (const wake of [...waiters.values()]) wake();
      if (sub) await sub.quit().catch(() => sub.disconnect());
    },
  };
}
