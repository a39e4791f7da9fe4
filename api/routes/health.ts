import Router from '@koa/router';
import { withTimeout } from '../../shared/timeout';

/** /health/live: the process answers. /health/ready: Postgres and Redis answer too. */
export const healthRouter = new Router({ prefix: '/health' })
  .get('/live', (ctx) => {
    ctx.body = { status: 'ok' };
  })
  .get('/ready', async (ctx) => {
    const { db, redis } = ctx.services;
    const [pg, rd] = await Promise.allSettled([withTimeout(db.raw('select 1'), 2000), withTimeout(redis.ping(), 2000)]);
    const checks = {
      postgres: pg.status === 'fulfilled' ? 'ok' : 'down',
      redis: rd.status === 'fulfilled' ? 'ok' : 'down',
    };
    const ok = checks.postgres === 'ok' && checks.redis === 'ok';
    ctx.status = ok ? 200 : 503;
    ctx.body = { status: ok ? 'ok' : 'unavailable', checks };
  });
