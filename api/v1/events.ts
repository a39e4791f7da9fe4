import { callerOf } from './caller';
import { component, defineRoutes, route } from '../routeTable';
import { pageOf, UNIX_SECONDS } from '../openapi/schemas';
import { CURSOR_QUERY, LIMIT_QUERY, parseLimit } from '../../shared/db/pagination';
import { getEvent, listEvents, parseEventCursor } from '../../shared/events/read';
import { EVENT_TYPES } from '../../shared/vocabulary';

/** The event envelope (spec 6.2), as webhook deliveries send it. */
export const Event = component('Event', {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'created', 'data'],
  properties: {
    id: { type: 'string', pattern: '^evt_', description: '`evt_<object uuid>_<unix seconds>_<random>`' },
    type: { type: 'string', enum: EVENT_TYPES },
    created: UNIX_SECONDS,
    data: {
      type: 'object',
      additionalProperties: false,
      required: ['object', 'object_version'],
      properties: {
        object: {
          type: 'object',
          description:
            'The payment (with `customer` and `completed_at` in place of the API fields), refund, payout or settlement object, or for webhook.test `{object: "webhook_test", webhook_id, message}`',
        },
        object_version: { type: 'integer', description: 'Grows with each change of the object: drop an event older than one already applied' },
      },
    },
  },
});

export const EventList = pageOf('EventList', Event);

interface ListEventsQuery {
  type?: string;
  limit?: string;
  cursor?: string;
}

const listEventsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: EVENT_TYPES, description: 'Only events of this type' },
    limit: LIMIT_QUERY,
    cursor: CURSOR_QUERY,
  },
} as const;

/** Events of the key's merchant and environment (decisions.md), for merchants catching up. */
export const eventsRoutes = defineRoutes([
  route<never, ListEventsQuery>({
    method: 'GET',
    path: '/events',
    operationId: 'listEvents',
    summary: 'List events',
    description: 'Every event of the key\'s merchant and environment, newest first, in the webhook envelope: catch up on anything missed.',
    tag: 'Events',
    scope: 'read',
    query: listEventsSchema,
    responses: { 200: { description: 'A page of events', body: EventList } },
    async handler(ctx, { query }) {
      const page = { type: query.type, limit: parseLimit(query.limit), cursor: parseEventCursor(query.cursor) };
      ctx.body = await listEvents(ctx.services.db, callerOf(ctx), page);
    },
  }),
  route({
    method: 'GET',
    path: '/events/:id',
    operationId: 'getEvent',
    summary: 'Retrieve an event',
    tag: 'Events',
    scope: 'read',
    params: { id: { description: 'The event id (`evt_…`)' } },
    responses: { 200: { description: 'The event', body: Event } },
    async handler(ctx) {
      ctx.body = await getEvent(ctx.services.db, callerOf(ctx), ctx.params.id);
    },
  }),
]);
