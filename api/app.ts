import Koa, { type Middleware } from 'koa';
import type Router from '@koa/router';
import compose from 'koa-compose';
import './types';
import type { ServiceContext } from '../shared/context';
import { requestContext } from './middleware/requestContext';
import { acceptTarget, refuseBadTarget } from './middleware/requestTarget';
import { securityHeaders } from './middleware/securityHeaders';
import { errorHandler } from './middleware/errors';
import { maintenance } from './middleware/maintenance';
import { overload } from './middleware/overload';
import { adminAuth } from './middleware/adminAuth';
import { healthRouter } from './routes/health';
import { adminRouter } from './routes/admin';
import { webhooksAdminRouter } from './routes/admin/webhooks';
import { reconciliationAdminRouter } from './routes/admin/reconciliation';
import { refundsAdminRouter } from './routes/admin/refunds';
import { boardMiddleware } from './board';
import { callbacksRouter } from './callbacks';
import { checkoutRouter, checkoutRoutes } from './checkout';
import { linkRoutes, linksRouter } from './checkout/links';
import { createMetrics, type Metrics } from './metrics';
import { MethodNotAllowed } from '../shared/errors';
import { v1PublicRouter, v1Router } from './v1';
import { docsRouter } from './routes/docs';
import { merchantPipeline } from './pipeline';
import { V1_PATH } from './pipeline/request';

export interface AppOptions {
  /** Extra /v1 routes behind the merchant pipeline (tests and the bench); production passes none. */
  extraV1Routes?: Middleware;
  /**
   * `all` (default), `public` (merchant API, provider callbacks, health) or `admin` (operator
   * API, Bull Board, /metrics, health). ADMIN_PORT set: `public` on PORT, `admin` on ADMIN_PORT.
   */
  surface?: 'all' | 'public' | 'admin';
  /** Metrics shared between the apps of one process, so /metrics counts every listener's requests. */
  metrics?: Metrics;
}

/** A wrong method on an operator route: 405 `method-not-allowed` with `Allow`, not the router's empty 405 or 501. */
function allowedMethods(router: Router): Middleware {
  const allowed = router.allowedMethods() as Middleware;
  return async (ctx, next) => {
    await allowed(ctx, next);
    if ((ctx.status === 405 || ctx.status === 501) && !ctx.body) {
      const allow = ctx.response.get('Allow');
      throw new MethodNotAllowed(
        `${ctx.method} is not allowed on this path${allow ? ` (allowed: ${allow})` : ''}`,
        allow,
      );
    }
  };
}

/** Routers whose templates label the metrics (api/metrics.ts). */
const LABEL_ROUTERS: Router[] = [
  v1Router,
  v1PublicRouter,
  docsRouter,
  adminRouter,
  webhooksAdminRouter,
  reconciliationAdminRouter,
  refundsAdminRouter,
  healthRouter,
  callbacksRouter,
];

/** Assembles the web process: the HTTP frame shared by every route, then each route group. */
export function buildApp(services: ServiceContext, opts: AppOptions = {}): Koa {
  const surface = opts.surface ?? 'all';
  const trusted = services.config.trustedProxies;
  const app = new Koa({ proxy: trusted > 0, maxIpsCount: trusted || undefined });
  app.context.services = services;
  app.silent = true; // errors are logged by errorHandler, with redaction

  const metrics = opts.metrics ?? createMetrics(services);
  const checkout = checkoutRouter(services);
  const links = linksRouter(services);

  app.use(acceptTarget); // first: a target Node cannot parse would break every later step
  app.use(requestContext);
  app.use(metrics.record([...LABEL_ROUTERS, checkout, links]));
  app.use(securityHeaders);
  app.use(errorHandler);
  app.use(refuseBadTarget);
  const operator = surface !== 'public';
  const merchant = surface !== 'admin';
  if (merchant) {
    // provider callbacks are stored even during maintenance: a provider may not send them twice
    app.use(callbacksRouter.routes() as Middleware);
    // after callbacks (never refused: a provider may not send them again), before anything that
    // may wait (the maintenance flag's read): a request is counted in flight from its arrival
    app.use(overload(services, metrics));
    app.use(maintenance);
  }
  app.use(healthRouter.routes() as Middleware);
  if (operator) {
    const admin = compose([
      adminAuth,
      adminRouter.routes() as Middleware,
      allowedMethods(adminRouter),
      webhooksAdminRouter.routes() as Middleware,
      allowedMethods(webhooksAdminRouter),
      reconciliationAdminRouter.routes() as Middleware,
      allowedMethods(reconciliationAdminRouter),
      refundsAdminRouter.routes() as Middleware,
      allowedMethods(refundsAdminRouter),
      boardMiddleware(services.queues),
    ]);
    app.use((ctx, next) => (ctx.path === '/admin' || ctx.path.startsWith('/admin/') ? admin(ctx, next) : next()));
    app.use((ctx, next) =>
      ctx.path === '/metrics' && ctx.method === 'GET' ? adminAuth(ctx, () => metrics.serve(ctx, next)) : next(),
    );
  }
  if (merchant) {
    // the hosted card checkout: the client's browser, no merchant key
    app.use(checkoutRoutes(checkout));
    // the payment-link page (the same checkout frame): mobile money, or the card checkout above
    app.use(linkRoutes(links));
    // the API reference: the OpenAPI document and the page rendering it take no key
    app.use(docsRouter.routes() as Middleware);
    app.use(v1PublicRouter.routes() as Middleware);
    // every other /v1 request, known route or not, passes the pipeline first (case-insensitive: so does the router)
    const pipeline = merchantPipeline(services);
    app.use((ctx, next) => (V1_PATH.test(ctx.path) ? pipeline(ctx, next) : next()));
    if (opts.extraV1Routes) app.use(opts.extraV1Routes);
    app.use(v1Router.routes() as Middleware);
  }
  return app;
}

/** The apps of one web process (see AppOptions.surface), sharing one metrics registry. */
export function buildApps(
  services: ServiceContext,
  opts: Omit<AppOptions, 'surface' | 'metrics'> = {},
): { public: Koa; admin: Koa | null } {
  if (services.config.adminPort === null) return { public: buildApp(services, opts), admin: null };
  const metrics = createMetrics(services);
  return {
    public: buildApp(services, { ...opts, surface: 'public', metrics }),
    admin: buildApp(services, { surface: 'admin', metrics }),
  };
}
