import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../queues/connection';

/**
 * Per-endpoint concurrency bound, shared by every sender process: at most `limit` attempts in
 * flight to one endpoint, so a slow endpoint holds at most that many sender slots. A job that
 * finds its endpoint full is delayed (no attempt spent), the longer the further back it waits and
 * the slower the endpoint's recent attempts (up to MAX_WAIT_MS), instead of spinning through the queue.
 *
 * Redis keys (ids only): holders, tokens scored by when they were taken (one older than the lease
 * is a dead process's, dropped); waiters, deliveries scored by their first wait (rank orders the
 * waits); and the endpoint's moving average attempt time.
 *
 * Within a process, a job of a fast endpoint (recent attempts under FAST_ENDPOINT_MS) that finds it
 * full waits up to LOCAL_WAIT_MS for a slot this process frees; a slow or hanging endpoint's jobs
 * are delayed at once, never holding sender slots while they wait. A slot freed while such a job
 * waits, taken under HANDOFF_MS ago, is handed straight to it (a busy endpoint costs Redis two
 * commands per slot, not per delivery); an older one goes back to Redis for every process. The
 * lease covers an attempt plus HANDOFF_MS, so a slot handed on is never dropped as a dead holder's.
 */

const MAX_WAIT_MS = 30_000;
const MIN_WAIT_MS = 5;
const WAITER_TTL_MS = 2 * MAX_WAIT_MS;
const FAST_ENDPOINT_MS = 50;
const LOCAL_WAIT_MS = 200;
/** How long after it was taken a freed slot may be handed to a waiting job of this process instead of going back to Redis. */
export const HANDOFF_MS = 1000;

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

/** Frees a slot; folds the mean time of the `n` attempts made with it into the average; drops served waiters. */
const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
local n = tonumber(ARGV[3])
if n > 0 then
  local latency = tonumber(ARGV[2])
  local avg = tonumber(redis.call('GET', KEYS[2]) or ARGV[2])
  local keep = 0.8 ^ n
  redis.call('SET', KEYS[2], tostring(avg * keep + latency * (1 - keep)), 'PX', 3600000)
end
for i = 4, #ARGV do redis.call('ZREM', KEYS[3], ARGV[i]) end
return 1
`;

type Scripted = RedisClient & {
  webhookSlotAcquire(
    k1: string,
    k2: string,
    k3: string,
    lease: number,
    limit: number,
    token: string,
    member: string,
    stale: number,
  ): Promise<[number, number, number]>;
  webhookSlotRelease(
    k1: string,
    k2: string,
    k3: string,
    token: string,
    latency: number,
    n: number,
    ...served: string[]
  ): Promise<number>;
};

/** A slot of one endpoint held by this process, across the deliveries it is handed to. */
export interface Slot {
  readonly webhookId: string;
  readonly token: string;
  /** Local clock, read before the slot was asked for (never later than Redis's score of it). */
  readonly takenAt: number;
  /** Attempts made with the slot and their total time, for the endpoint's average. */
  attempts: number;
  latencyMs: number;
  /** Deliveries handed the slot after they had queued in Redis's waiters (removed on release). */
  served: string[];
}

export type SlotGrant = { ok: true; slot: Slot } | { ok: false; waitMs: number; avgMs: number };

/** A job of this process waiting for a slot of an endpoint: handed one, or told one went back to Redis. */
interface Waiter {
  wake(slot: Slot | 'returned'): void;
  /** Its delivery, when it has queued in Redis's waiters. */
  member?: string;
}

/** How long a job waits when `rank` jobs are ahead of it for `limit` slots of ~`avgMs` each. */
export function saturatedWaitMs(rank: number, limit: number, avgMs: number, random = Math.random()): number {
  const perRound = Math.max(avgMs, MIN_WAIT_MS);
  const base = Math.min(MAX_WAIT_MS, perRound * (Math.floor(rank / limit) + 1));
  return Math.round(base * (0.75 + random / 2));
}

export class EndpointSemaphore {
  private readonly redis: Scripted;
  private readonly leaseMs: number;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Slots of each endpoint this process holds in Redis (one handed on is still held). */
  private readonly held = new Map<string, number>();

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly limit: number,
    /** How long one attempt may hold a slot before its process is presumed dead. */
    attemptLeaseMs: number,
  ) {
    redis.defineCommand('webhookSlotAcquire', { numberOfKeys: 3, lua: ACQUIRE });
    redis.defineCommand('webhookSlotRelease', { numberOfKeys: 3, lua: RELEASE });
    this.redis = redis as Scripted;
    this.leaseMs = attemptLeaseMs + HANDOFF_MS;
  }

  private keys(webhookId: string) {
    // one endpoint's keys share a hash tag: its scripts touch only them, in one Redis Cluster slot
    const base = `${this.prefix}:{webhook-slots:${webhookId}}`;
    return { holders: `${base}:holders`, waiters: `${base}:waiters`, avg: `${base}:avg-ms` };
  }

  /** A slot of the endpoint, or how long to wait before asking again. */
  async acquire(webhookId: string, deliveryId: string): Promise<SlotGrant> {
    const deadline = Date.now() + LOCAL_WAIT_MS;
    // jobs of this process already wait for a slot it holds of this fast endpoint: queue behind them
    const queued = this.waiters.has(webhookId) && (this.held.get(webhookId) ?? 0) > 0;
    let grant = queued ? null : await this.take(webhookId, deliveryId);
    for (;;) {
      if (grant && (grant.ok || grant.avgMs >= FAST_ENDPOINT_MS)) return grant;
      const woken = await this.freedHere(webhookId, grant ? deliveryId : undefined, deadline - Date.now());
      if (woken !== 'returned' && woken !== 'timeout') return { ok: true, slot: woken };
      grant = await this.take(webhookId, deliveryId);
      if (woken === 'timeout') return grant;
    }
  }

  /** Gives the slot back after an attempt of `latencyMs` (-1: none): to a waiting job here while young, else to Redis. */
  async release(slot: Slot, latencyMs: number): Promise<void> {
    if (latencyMs >= 0) {
      slot.attempts++;
      slot.latencyMs += latencyMs;
    }
    const next = this.nextWaiter(slot.webhookId);
    if (next && Date.now() - slot.takenAt < HANDOFF_MS) {
      if (next.member) slot.served.push(next.member);
      next.wake(slot);
      return;
    }
    this.count(slot.webhookId, -1);
    try {
      const k = this.keys(slot.webhookId);
      const mean = slot.attempts ? Math.round(slot.latencyMs / slot.attempts) : -1;
      await this.redis.webhookSlotRelease(k.holders, k.avg, k.waiters, slot.token, mean, slot.attempts, ...slot.served);
    } finally {
      next?.wake('returned');
    }
  }

  private async take(webhookId: string, deliveryId: string): Promise<SlotGrant> {
    const k = this.keys(webhookId);
    const token = randomUUID();
    const takenAt = Date.now();
    const [ok, rank, avg] = await this.redis.webhookSlotAcquire(
      k.holders,
      k.waiters,
      k.avg,
      this.leaseMs,
      this.limit,
      token,
      deliveryId,
      WAITER_TTL_MS,
    );
    if (ok !== 1) return { ok: false, waitMs: saturatedWaitMs(rank, this.limit, avg), avgMs: avg };
    this.count(webhookId, 1);
    return { ok: true, slot: { webhookId, token, takenAt, attempts: 0, latencyMs: 0, served: [] } };
  }

  private count(webhookId: string, delta: number): void {
    const n = (this.held.get(webhookId) ?? 0) + delta;
    if (n > 0) this.held.set(webhookId, n);
    else this.held.delete(webhookId);
  }

  /** Resolves with a slot handed over here, 'returned' when one went back to Redis, 'timeout' after `ms`. */
  private freedHere(webhookId: string, member: string | undefined, ms: number): Promise<Slot | 'returned' | 'timeout'> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.nextWaiter(webhookId, waiter);
          resolve('timeout');
        },
        Math.max(0, ms),
      );
      const waiter: Waiter = {
        member,
        wake: (slot) => {
          clearTimeout(timer);
          resolve(slot);
        },
      };
      this.waiters.set(webhookId, (this.waiters.get(webhookId) ?? new Set()).add(waiter));
    });
  }

  /** Takes `waiter`, or else the first waiting, out of the endpoint's queue. */
  private nextWaiter(webhookId: string, waiter?: Waiter): Waiter | undefined {
    const queue = this.waiters.get(webhookId);
    const next = waiter ?? queue?.values().next().value;
    if (next) queue?.delete(next);
    if (queue?.size === 0) this.waiters.delete(webhookId);
    return next;
  }
}
