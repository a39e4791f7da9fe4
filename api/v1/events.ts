import Router from '@koa/router';
import { lastValue } from '../query';
import { callerOf } from './caller';
import { parseLimit } from '../../shared/db/pagination';
import { getEvent, listEvents, parseEventCursor, parseEventType } from '../../shared/events/read';
import { listEventDeliveries, redeliverEvent } from '../../shared/webhooks/redeliver';
import { validator } from '../../shared/validation';
import { refuseQuery } from '../query';

/** POST /v1/events/{id}/redeliver takes no fields (an empty body or `{}`). */
const validateRedeliver = validator<Record<string, never>>({ type: 'object', additionalProperties: false, properties: {} });

/** Events of the key's merchant and environment (decisions.md), for merchants catching up. */
export const eventsRouter = new Router()
  .get('/events', async (ctx) => {
    const query = {
      type: parseEventType(lastValue(ctx.query.type)),
      limit: parseLimit(lastValue(ctx.query.limit)),
      cursor: parseEventCursor(lastValue(ctx.query.cursor)),
    };
    ctx.body = await listEvents(ctx.services.db, callerOf(ctx), query);
  })
  .get('/events/:id', async (ctx) => {
    ctx.body = await getEvent(ctx.services.db, callerOf(ctx), ctx.params.id);
  })
  .get('/events/:id/deliveries', async (ctx) => {
    refuseQuery(ctx.query);
    ctx.body = await listEventDeliveries(ctx.services.db, callerOf(ctx), ctx.params.id);
  })
  // scope full and a signature: the pipeline's (api/pipeline/scope.ts allows other keys no POST here)
  .post('/events/:id/redeliver', async (ctx) => {
    validateRedeliver(ctx.state.body);
    const { db, queues } = ctx.services;
    ctx.body = await redeliverEvent({ db, queues, log: ctx.state.log }, callerOf(ctx), ctx.params.id);
    ctx.status = 202;
  });
