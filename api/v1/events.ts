import Router from '@koa/router';
import type { Context } from 'koa';
import { ApiError } from '../../shared/errors';
import { parseLimit } from '../../shared/payments/pagination';
import { getEvent, listEvents, parseEventCursor, parseEventType } from '../../shared/webhooks/recovery';

/** The caller the merchant pipeline authenticated; the pipeline always runs first. */
function caller(ctx: Context) {
  const auth = ctx.state.auth;
  if (!auth) throw new ApiError(401, 'auth-required', 'Authentication is required');
  return { merchantId: auth.merchantId, environment: auth.environment };
}

/** A query parameter given twice arrives as an array: the last value counts. */
const text = (v: string | string[] | undefined) => (Array.isArray(v) ? v[v.length - 1] : v);

/** Events of the key's merchant and environment (decisions.md), for merchants catching up. */
export const eventsRouter = new Router()
  .get('/events', async (ctx) => {
    const query = {
      type: parseEventType(text(ctx.query.type)),
      limit: parseLimit(text(ctx.query.limit)),
      cursor: parseEventCursor(text(ctx.query.cursor)),
    };
    ctx.body = await listEvents(ctx.services.db, caller(ctx), query);
  })
  .get('/events/:id', async (ctx) => {
    ctx.body = await getEvent(ctx.services.db, caller(ctx), ctx.params.id);
  });
