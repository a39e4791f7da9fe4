import Koa, { type Middleware } from 'koa';
import compose from 'koa-compose';
import './types';
import type { ServiceContext } from '../shared/context';
import { requestContext } from './middleware/requestContext';
import { acceptTarget, refuseBadTarget } from './middleware/requestTarget';
import { securityHeaders } from './middleware/securityHeaders';
import { errorHandler } from './middleware/errors';
import { maintenance } from './middleware/maintenance';
import { adminAuth } from './middleware/adminAuth';
import { healthRouter } from './routes/health';
import { adminRouter } from './routes/admin';
import { webhooksAdminRouter } from './routes/admin/webhooks';
import { boardMiddleware } from './board';
import { callbacksRouter } from './callbacks';
import { createMetrics } from './metrics';
import { v1Router } from './v1';
import { merchantPipeline } from './pipeline';
import { V1_PATH } from './pipeline/request';

export interface AppOptions {
  /**
   * Extra /v1 routes mounted after the merchant pipeline and before v1Router (tests and the
   * bench use it to reach trivial routes through the real pipeline); production passes none.
   */
  extraV1Routes?: Middleware;
}

/** Assembles the web process: the HTTP frame shared by every route, then each route group. */
export function buildApp(services: ServiceContext, opts: AppOptions = {}): Koa {
  const trusted = services.config.trustedProxies;
  const app = new Koa({ proxy: trusted > 0, maxIpsCount: trusted || undefined });
  app.context.services = services;
  app.silent = true; // errors are logged by errorHandler, with redaction

  const admin = compose([
    adminAuth,
    adminRouter.routes() as Middleware,
    adminRouter.allowedMethods() as Middleware,
    webhooksAdminRouter.routes() as Middleware,
    webhooksAdminRouter.allowedMethods() as Middleware,
    boardMiddleware(services.queues),
  ]);

  const metrics = createMetrics(services);

  app.use(acceptTarget); // first: a target Node cannot parse would break every later step
  app.use(requestContext);
  app.use(metrics.record);
  app.use(securityHeaders);
  app.use(errorHandler);
  app.use(refuseBadTarget);
  // provider callbacks are stored even during maintenance: a provider may not send them twice
  app.use(callbacksRouter.routes() as Middleware);
  app.use(maintenance);
  app.use(healthRouter.routes() as Middleware);
  app.use((ctx, next) => (ctx.path === '/admin' || ctx.path.startsWith('/admin/') ? admin(ctx, next) : next()));
  app.use((ctx, next) => (ctx.path === '/metrics' && ctx.method === 'GET' ? adminAuth(ctx, () => metrics.serve(ctx, next)) : next()));
  // every /v1 request, known route or not, passes the pipeline first (case-insensitive: so does the router)
  const pipeline = merchantPipeline(services);
  app.use((ctx, next) => (V1_PATH.test(ctx.path) ? pipeline(ctx, next) : next()));
  if (opts.extraV1Routes) app.use(opts.extraV1Routes);
  app.use(v1Router.routes() as Middleware);
  return app;
}
