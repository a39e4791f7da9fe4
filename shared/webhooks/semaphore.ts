import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Per-endpoint concurrency bound, shared by every sender process: at most `limit` attempts in
 * flight to one endpoint, so a slow endpoint holds at most that many sender slots. A job that
 * finds its endpoint full is delayed (no attempt spent), for longer the further back it waits,
 * scaled by the endpoint's recent attempt time: a fast endpoint's jobs retry within milliseconds,
 * a slow one's back off up to MAX_WAIT_MS instead of spinning through the queue.
 *
 * Redis keys (ids only): holders, a sorted set of tokens scored by start time (a holder older
 * than the lease is a dead process and is dropped); waiters, deliveries scored by when they
 * first waited (their rank orders the waits); and the endpoint's moving average attempt time.
 */

const MAX_WAIT_MS = 30_000;
const MIN_WAIT_MS = 5;
const WAITER_TTL_MS = 2 * MAX_WAIT_MS;

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leaseMs, limit, staleMs = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - leaseMs)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - staleMs)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], leaseMs)
  redis.call('ZREM', KEYS[2], ARGV[4])
  return {1, 0, 0}
end
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[4])
redis.call('PEXPIRE', KEYS[2], staleMs)
local avg = tonumber(redis.call('GET', KEYS[3]) or '0')
return {0, redis.call('ZRANK', KEYS[2], ARGV[4]), math.floor(avg)}
`;

const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
local latency = tonumber(ARGV[2])
if latency >= 0 then
  local avg = tonumber(redis.call('GET', KEYS[2]) or ARGV[2])
  redis.call('SET', KEYS[2], tostring(avg * 0.8 + latency * 0.2), 'PX', 3600000)
end
return 1
`;

type Scripted = Redis & {
  webhookSlotAcquire(k1: string, k2: string, k3: string, lease: number, limit: number, token: string, member: string, stale: number): Promise<[number, number, number]>;
  webhookSlotRelease(k1: string, k2: string, token: string, latency: number): Promise<number>;
};

export type SlotGrant = { ok: true; token: string } | { ok: false; waitMs: number; avgMs: number };

/** How long a job waits when `rank` jobs are ahead of it for `limit` slots of ~`avgMs` each. */
export function saturatedWaitMs(rank: number, limit: number, avgMs: number, random = Math.random()): number {
  const perRound = Math.max(avgMs, MIN_WAIT_MS);
  const base = Math.min(MAX_WAIT_MS, perRound * (Math.floor(rank / limit) + 1));
  return Math.round(base * (0.75 + random / 2));
}

export class EndpointSemaphore {
  private readonly redis: Scripted;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly leaseMs: number,
  ) {
    redis.defineCommand('webhookSlotAcquire', { numberOfKeys: 3, lua: ACQUIRE });
    redis.defineCommand('webhookSlotRelease', { numberOfKeys: 2, lua: RELEASE });
    this.redis = redis as Scripted;
  }

  private keys(webhookId: string) {
    const base = `${this.prefix}:webhook-slots:${webhookId}`;
    return { holders: `${base}:holders`, waiters: `${base}:waiters`, avg: `${base}:avg-ms` };
  }

  async acquire(webhookId: string, deliveryId: string): Promise<SlotGrant> {
    const k = this.keys(webhookId);
    const token = randomUUID();
    const [ok, rank, avg] = await this.redis.webhookSlotAcquire(k.holders, k.waiters, k.avg, this.leaseMs, this.limit, token, deliveryId, WAITER_TTL_MS);
    return ok === 1 ? { ok: true, token } : { ok: false, waitMs: saturatedWaitMs(rank, this.limit, avg), avgMs: avg };
  }

  /** Frees the slot; `latencyMs` (-1 when no attempt was made) feeds the endpoint's average. */
  async release(webhookId: string, token: string, latencyMs: number): Promise<void> {
    const k = this.keys(webhookId);
    await this.redis.webhookSlotRelease(k.holders, k.avg, token, latencyMs);
  }
}
