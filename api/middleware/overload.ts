import type { Middleware } from 'koa';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { OverloadConfig } from '../../shared/config';
import type { ServiceContext } from '../../shared/context';
import { Unavailable } from '../../shared/errors';
import { readBacklog } from '../../shared/queues/backlog';
import { withTimeout } from '../../shared/timeout';
import type { Metrics } from '../metrics';
import { canonicalPath } from '../pipeline/request';

/** The requests that add work behind the API and are refused while it falls behind. */
const GUARDED = new Set(['/v1/payments', '/v1/payouts']);

export interface Overloaded {
  reason: 'queue-depth' | 'queue-wait' | 'in-flight' | 'event-loop-lag';
  /** the queue behind, for the queue reasons */
  queue?: string;
}

/** How long the first request after a quiet spell waits for a fresh sample before letting the request through. */
const FRESH_SAMPLE_TIMEOUT_MS = 100;

/**
 * Whether the work behind the API is behind (OverloadConfig), from a sample of the queues that
 * is refreshed at most every `sampleMs`: a request never waits on Redis for it, except the first
 * after a quiet spell (a sample older than four periods), which waits at most 100 ms. A sample
 * that cannot be read (Redis down) counts as not overloaded: the rate limiter answers for Redis.
 */
export class OverloadMonitor {
  private sample: { at: number; over: Overloaded | null } | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly services: ServiceContext,
    private readonly cfg: OverloadConfig,
  ) {}

  get enabled(): boolean {
    return this.cfg.maxWaiting > 0 || this.cfg.maxWaitMs > 0;
  }

  async check(now = Date.now()): Promise<Overloaded | null> {
    const age = this.sample ? now - this.sample.at : Infinity;
    if (age > this.cfg.sampleMs) {
      const refresh = this.refresh();
      if (age > this.cfg.sampleMs * 4) await withTimeout(refresh, FRESH_SAMPLE_TIMEOUT_MS).catch(() => undefined);
    }
    const s = this.sample;
    return s && now - s.at <= this.cfg.sampleMs * 4 ? s.over : null;
  }

  private refresh(): Promise<void> {
    this.refreshing ??= this.read()
      .catch(() => null)
      .then((over) => {
        const before = this.sample?.over ?? null;
        if (over && (before?.reason !== over.reason || before.queue !== over.queue)) {
          this.services.log.warn(
            { queue: over.queue, reason: over.reason },
            'overloaded: creating payments and payouts is refused until the queues catch up',
          );
        } else if (!over && before) this.services.log.warn('no longer overloaded: creating payments and payouts again');
        this.sample = { at: Date.now(), over };
      })
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async read(): Promise<Overloaded | null> {
    if (!this.services.queues.isReady()) return null;
    for (const q of await readBacklog(this.services.queues)) {
      if (this.cfg.maxWaiting > 0 && q.waiting > this.cfg.maxWaiting) return { reason: 'queue-depth', queue: q.queue };
      if (this.cfg.maxWaitMs > 0 && q.oldestWaitMs !== null && q.oldestWaitMs > this.cfg.maxWaitMs)
        return { reason: 'queue-wait', queue: q.queue };
    }
    return null;
  }
}

/** Requests in flight at or below which a late event loop refuses nothing: a quarter of OVERLOAD_MAX_IN_FLIGHT (16 of 64, also with no bound). */
const lagFloorOf = (maxInFlight: number) => Math.floor((maxInFlight || 64) / 4);

/** Windows without a question after which the event-loop sampler stops (10 s at the default 500 ms). */
const QUIET_WINDOWS = 20;

/**
 * The delay of this process's event loop (ms): the p90 of the last whole `windowMs`, or of the
 * window under way when it is already worse (a loop that turns late is seen at once). Sampled
 * only while it is asked: the first question after a quiet spell starts the sampler (it answers
 * 0 until a sample exists: a loop that was idle is not late), and QUIET_WINDOWS windows without a
 * question stop it, so an idle web does not wake up for it.
 */
function eventLoopLag(windowMs: number): () => number {
  // 50 wake-ups a second while sampling: a late loop shows as long samples
  const histogram = monitorEventLoopDelay({ resolution: 20 });
  const p90 = () => (histogram.count > 0 ? histogram.percentile(90) / 1e6 : 0);
  let last = 0;
  let quiet = 0;
  let timer: NodeJS.Timeout | undefined;
  const endWindow = () => {
    last = p90();
    histogram.reset();
    if (++quiet >= QUIET_WINDOWS) {
      histogram.disable();
      clearInterval(timer);
      timer = undefined;
      last = 0;
    }
  };
  return () => {
    quiet = 0;
    if (!timer) {
      histogram.enable();
      timer = setInterval(endWindow, windowMs).unref();
    }
    return Math.max(last, p90());
  };
}

/**
 * 503 `service-unavailable` with Retry-After for POST /v1/payments and POST /v1/payouts while
 * the work behind the API falls behind (its queues), while this process's event loop is late
 * (OVERLOAD_MAX_LAG_MS), or while it handles more than OVERLOAD_MAX_IN_FLIGHT merchant requests
 * at once: before any other step (no key lookup, no body read), so a refusal costs almost
 * nothing and the process stays responsive. Every other request, provider callbacks included
 * (routed before this guard), goes on. Counted in `http_requests_shed_total{route, reason}`.
 */
export function overload(services: ServiceContext, metrics: Metrics): Middleware {
  const cfg = services.config.overload;
  const monitor = new OverloadMonitor(services, cfg);
  if (!monitor.enabled && cfg.maxInFlight === 0 && cfg.maxLagMs === 0) return (_ctx, next) => next();
  const lag = cfg.maxLagMs > 0 ? eventLoopLag(cfg.sampleMs) : () => 0;
  // the merchant API requests this process is handling (callbacks are routed before this guard)
  let inFlight = 0;
  const lagFloor = lagFloorOf(cfg.maxInFlight);
  const overloaded = async (): Promise<Overloaded | null> => {
    if (cfg.maxInFlight > 0 && inFlight > cfg.maxInFlight) return { reason: 'in-flight' };
    // a late loop alone is a busy machine that keeps up; a late loop with requests piling up is one
    // that does not (the loop is asked first: every guarded POST keeps its sampler running)
    if (cfg.maxLagMs > 0 && lag() > cfg.maxLagMs && inFlight > lagFloor) return { reason: 'event-loop-lag' };
    return monitor.check();
  };
  return async (ctx, next) => {
    inFlight++;
    try {
      const route = ctx.method === 'POST' ? canonicalPath(ctx.path) : undefined;
      if (route && GUARDED.has(route)) {
        const over = await overloaded();
        if (over) {
          metrics.shed.inc({ route, reason: over.reason });
          throw new Unavailable('service-unavailable', 'The service is overloaded; retry later', cfg.retryAfterS);
        }
      }
      await next();
    } finally {
      inFlight--;
    }
  };
}
