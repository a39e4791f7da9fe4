import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ServiceContext } from '../shared/context';
import { countPastBound } from '../shared/operations/attention';
import { BOARD_PATH } from './board';
import { KINDS } from '../shared/operationKinds';

/** Methods kept as label values; anything else (Node accepts a few dozen) is counted as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
export const UNMATCHED = 'unmatched';

/**
 * The route label of a request: the template of the route it reached (`/v1/payments/:id`), or of
 * the route its path would reach when a step refused it before any router ran (a 401 or 429 of
 * the pipeline), or `unmatched`. Never the raw path: every distinct label value is a new series
 * kept for the life of the process, so a client sending random paths must not create any.
 */
export function routeLabel(ctx: Context, routers: Router[]): string {
  const matched = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  const path = ctx.path;
  if (path === '/metrics') return '/metrics';
  if (path === BOARD_PATH || path.startsWith(`${BOARD_PATH}/`)) return `${BOARD_PATH}/*`;
  for (const router of routers) {
    const layers = router.match(path, ctx.method).path.filter((l) => l.methods.length > 0);
    if (layers.length) return String(layers[layers.length - 1].path);
  }
  return UNMATCHED;
}

/**
 * GET /metrics (admin token): Prometheus text. Request counts and latency by route pattern
 * (never by raw path: ids would explode the label set), queue depths read at scrape time, and
 * the process's default metrics.
 */
export interface Metrics {
  /** Counts and times every request; the routers give the templates requests are labelled by. */
  record(routers: Router[]): Middleware;
  serve: Middleware;
  registry: Registry;
  /** requests refused by the overload guard (api/middleware/overload.ts), by route and reason */
  shed: Counter<'route' | 'reason'>;
}

export function createMetrics(services: ServiceContext): Metrics {
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
      const counts = await countPastBound(services.db, KINDS, services.clock.now()).catch(() => undefined);
      for (const [kind, n] of Object.entries(counts ?? {})) this.set({ kind }, n);
    },
  });

  const shed = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests answered 503 service-unavailable because the work behind the API fell behind (OVERLOAD_*)',
    labelNames: ['route', 'reason'] as const,
    registers: [registry],
  });

  const record = (routers: Router[]): Middleware => async (ctx, next) => {
    const end = duration.startTimer();
    try {
      await next();
    } finally {
      const method = METHODS.has(ctx.method) ? ctx.method : 'OTHER';
      const labels = { method, route: routeLabel(ctx, routers), status: String(ctx.status) };
      requests.inc(labels);
      end(labels);
    }
  };
  const serve: Middleware = async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
  return { record, serve, registry, shed };
}
