import type { Middleware } from 'koa';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ServiceContext } from '../shared/context';
import { countPastBound } from '../shared/operations/attention';

/**
 * GET /metrics (admin token): Prometheus text. Request counts and latency by route pattern
 * (never by raw path: ids would explode the label set), queue depths read at scrape time, and
 * the process's default metrics.
 */
export function createMetrics(services: ServiceContext): { record: Middleware; serve: Middleware } {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of services.queues.all()) {
        const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'failed').catch(() => undefined);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: q.name, state }, n);
      }
    },
  });

  new Gauge({
    name: 'operations_open_past_bound',
    help: 'Payments, refunds and payouts still open an hour after their provider window (GET /admin/attention)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await countPastBound(services.db, services.clock.now()).catch(() => undefined);
      for (const [kind, n] of Object.entries(counts ?? {})) this.set({ kind }, n);
    },
  });

  const record: Middleware = async (ctx, next) => {
    const end = duration.startTimer();
    try {
      await next();
    } finally {
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? (ctx.status === 404 ? 'unmatched' : ctx.path.split('/').slice(0, 3).join('/'));
      const labels = { method: ctx.method, route: String(route), status: String(ctx.status) };
      requests.inc(labels);
      end(labels);
    }
  };
  const serve: Middleware = async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
  return { record, serve };
}
