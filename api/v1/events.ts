import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { idOf, listOf, nullable, pageOf, UNIX_SECONDS } from '../openapi/schemas';
import { CURSOR_QUERY, LIMIT_QUERY, parseLimit } from '../../shared/db/pagination';
import { getEvent, listEvents, parseEventCursor } from '../../shared/events/read';
import { EVENT_TYPES } from '../../shared/vocabulary';
import { listEventDeliveries, MAX_REDELIVERIES, redeliverEvent } from '../../shared/webhooks/redeliver';
import { refuseQuery } from '../query';

/** The event envelope (docs/decisions.md#webhooks), as webhook deliveries send it. */
export const Event = component(
  'Event',
  closedObject({
    id: { type: 'string', pattern: '^evt_', description: '`evt_<object uuid>_<unix seconds>_<random>`' },
    type: { type: 'string', enum: EVENT_TYPES },
    created: UNIX_SECONDS,
    data: closedObject({
      object: {
        type: 'object',
        description:
          'The payment (with `customer` and `completed_at` in place of the API fields), refund, payout or settlement object, or for webhook.test `{object: "webhook_test", webhook_id, message}`',
      },
      object_version: {
        type: 'integer',
        description: 'Grows with each change of the object: drop an event older than one already applied',
      },
    }),
  }),
);

export const EventList = pageOf('EventList', Event);

/** The delivery object (docs/decisions.md#integrators-kit). */
export const WebhookDelivery = component(
  'WebhookDelivery',
  closedObject({
    id: idOf('delivery', 'The delivery id: X-Service-Delivery-Id and webhook-id of its requests'),
    object: { const: 'webhook_delivery' },
    event_id: { type: 'string', pattern: '^evt_' },
    webhook_id: idOf('webhook', 'The endpoint'),
    status: {
      type: 'string',
      enum: ['pending', 'succeeded', 'failed', 'dead'],
      description: '`failed`: the last attempt failed and another is scheduled; `dead`: no attempt is left',
    },
    attempts: { type: 'integer', minimum: 0 },
    last_response_status: nullable({
      type: 'integer',
      description: 'HTTP status of the last attempt; null before one, or when it got no answer',
    }),
    created: UNIX_SECONDS,
  }),
);

export const WebhookDeliveryList = listOf('WebhookDeliveryList', WebhookDelivery);

const EVENT_ID = { description: 'The event id (`evt_…`)' };

/** Events of the key's merchant and environment (docs/decisions.md#integrators-kit), for merchants catching up. */
export const eventsRoutes = defineRoutes([
  route<never, { type?: string; limit?: string; cursor?: string }>({
    method: 'GET',
    path: '/events',
    operationId: 'listEvents',
    summary: 'List events',
    description:
      "Every event of the key's merchant and environment, newest first, in the webhook envelope: catch up on anything missed.",
    tag: 'Events',
    scope: 'read',
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { type: 'string', enum: EVENT_TYPES, description: 'Only events of this type' },
        limit: LIMIT_QUERY,
        cursor: CURSOR_QUERY,
      },
    },
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
    params: { id: EVENT_ID },
    responses: { 200: { description: 'The event', body: Event } },
    async handler(ctx) {
      ctx.body = await getEvent(ctx.services.db, callerOf(ctx), ctx.params.id);
    },
  }),
  route({
    method: 'GET',
    path: '/events/:id/deliveries',
    operationId: 'listEventDeliveries',
    summary: "List an event's deliveries",
    description:
      'Every delivery of the event (one per endpoint, and each redelivery), newest first, with its status, attempts and the last response status.',
    tag: 'Events',
    scope: 'read',
    params: { id: EVENT_ID },
    responses: { 200: { description: "The event's deliveries", body: WebhookDeliveryList } },
    errors: ['validation-failed'],
    async handler(ctx) {
      refuseQuery(ctx.query);
      ctx.body = await listEventDeliveries(ctx.services.db, callerOf(ctx), ctx.params.id);
    },
  }),
  route<Record<string, never>>({
    method: 'POST',
    path: '/events/:id/redeliver',
    operationId: 'redeliverEvent',
    summary: 'Send an event again',
    description: `Sends the event again to every endpoint of this environment that subscribes to its type today: a new delivery (new id, attempt 1) per endpoint. At most ${MAX_REDELIVERIES} redeliveries per event. Takes no fields: send \`{}\` or an empty body, with \`Content-Type: application/json\` either way (without it, even an empty body is 415 \`unsupported-media-type\`); any other body is 400 (\`invalid-json\` if it is not JSON, \`validation-failed\` for any field or a value that is not an object).`,
    tag: 'Events',
    scope: 'full',
    params: { id: EVENT_ID },
    body: { type: 'object', additionalProperties: false, properties: {} },
    responses: { 202: { description: 'The new deliveries', body: WebhookDeliveryList } },
    errors: ['redelivery-limit'],
    async handler(ctx) {
      const { db, outbox, clock } = ctx.services;
      ctx.body = await redeliverEvent({ db, outbox, clock, log: ctx.state.log }, callerOf(ctx), ctx.params.id);
      ctx.status = 202;
    },
  }),
]);
