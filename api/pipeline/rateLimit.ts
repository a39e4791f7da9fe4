import type { Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { ServiceContext } from '../../shared/context';
import { TooManyRequests } from '../../shared/errors';
import { withTimeout } from '../../shared/timeout';
import { unavailable } from '../middleware/errors';

/** A Redis call slower than this answers 503: a stalled Redis must not hang every request. */
const REDIS_TIMEOUT_MS = 2000;

/** Requests that change nothing: they keep working while Redis is unreachable (docs/decisions.md#backends-down). */
const READS: ReadonlySet<string> = new Set(['GET', 'HEAD']);
/** At most one "Redis unreachable" log line per process and interval, not one per request. */
const OUTAGE_LOG_INTERVAL_MS = 10_000;

/** A limiter's count of this request, and whether it went over (the limiter rejects with the count then). */
async function counted(consumed: Promise<RateLimiterRes>): Promise<{ res: RateLimiterRes; exceeded: boolean }> {
  try {
    return { res: await consumed, exceeded: false };
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    return { res: err, exceeded: true };
  }
}

/**
 * Step 6 of the pipeline (docs/decisions.md#merchant-pipeline): RATE_LIMIT_PER_MINUTE requests per API key per one-minute bucket, counted
 * in Redis so that every web process shares the count; X-RateLimit-* on every response from here
 * on; over the limit, 429 with Retry-After. Redis down or stalled: writes get 503, never a
 * silent pass; GET and HEAD are counted meanwhile by an in-process limiter with the same limit.
 */
export function rateLimit(services: ServiceContext): Middleware {
  const limit = services.config.rateLimitPerMinute;
  const limiter = new RateLimiterRedis({
    storeClient: services.redis,
    // under the queue prefix: a Redis Cluster hash tag, and one namespace per test file
    keyPrefix: `${services.config.queuePrefix}:ratelimit`,
    points: limit,
    duration: 60,
    rejectIfRedisNotReady: true,
  });
  const fallback = new RateLimiterMemory({ points: limit, duration: 60 });
  let lastOutageLog = 0;
  return async (ctx, next) => {
    const key = ctx.state.auth!.credentialId;
    let count;
    try {
      count = await counted(withTimeout(limiter.consume(key), REDIS_TIMEOUT_MS));
    } catch (err) {
      if (!READS.has(ctx.method)) {
        ctx.state.log.error({ err: { message: (err as Error)?.message } }, 'rate limiter unavailable');
        throw unavailable();
      }
      if (Date.now() - lastOutageLog > OUTAGE_LOG_INTERVAL_MS) {
        lastOutageLog = Date.now();
        ctx.state.log.warn(
          { err: { message: (err as Error)?.message } },
          'rate limiter: Redis unreachable, reads counted in process',
        );
      }
      count = await counted(fallback.consume(key));
    }
    const { res, exceeded } = count;
    const msLeft = Math.max(0, res.msBeforeNext);
    // Redis times the window (its key's TTL); the instant it ends is told by the service clock,
    // the one a merchant's X-Timestamp is judged by
    ctx.set({
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(res.remainingPoints),
      'X-RateLimit-Reset': String(Math.ceil((services.clock.now() + msLeft) / 1000)),
    });
    if (exceeded)
      throw new TooManyRequests(
        'rate-limit-exceeded',
        'Too many requests for this API key',
        Math.max(1, Math.ceil(msLeft / 1000)),
      );
    return next();
  };
}
