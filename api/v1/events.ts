import Router from '@koa/router';
import { lastValue } from '../query';
import { callerOf } from './caller';
import { parseLimit } from '../../shared/db/pagination';
import { getEvent, listEvents, parseEventCursor, parseEventType } from '../../shared/events/read';

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
  });
