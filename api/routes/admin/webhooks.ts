import Router from '@koa/router';
import { lastValue } from '../../query';
import { readJson } from '../../body';
import { closedObject } from '../../routeTable';
import { validator } from '../../../shared/validation';
import { isId } from '../../../shared/ids';
import { NotFound, ValidationFailed } from '../../../shared/errors';
import { parseCursor, parseLimit } from '../../../shared/db/pagination';
import {
  createWebhook,
  getWebhook,
  listWebhooks,
  sendTestEvent,
  updateWebhook,
  type WebhookInput,
  type WebhookPatch,
} from '../../../shared/webhooks/endpoints';
import { listDeliveries, replayDelivery } from '../../../shared/webhooks/operator';

const EVENTS = {
  type: 'array',
  minItems: 1,
  maxItems: 20,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 100 },
} as const;
const URL_FIELD = { type: 'string', minLength: 1, maxLength: 2048 } as const;

const validateCreate = validator<WebhookInput>(
  closedObject({
    merchant_id: { type: 'string', maxLength: 100 },
    url: URL_FIELD,
    events: EVENTS,
    environment: { type: 'string', enum: ['test', 'live'] },
  }),
);

const validatePatch = validator<WebhookPatch>({
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { url: URL_FIELD, events: EVENTS, status: { type: 'string', enum: ['enabled', 'disabled'] } },
});

const DELIVERY_STATUSES = ['pending', 'succeeded', 'dead'] as const;

/** The webhook id of the path; 404 when it cannot be one. */
function webhookId(id: string): string {
  if (!isId('webhook', id)) throw new NotFound('Webhook');
  return id;
}

/** Operator webhook routes (docs/decisions.md#operator-admin-api); mounted behind adminAuth. */
export const webhooksAdminRouter = new Router({ prefix: '/admin' })
  .post('/webhooks', async (ctx) => {
    const input = validateCreate(await readJson(ctx));
    if (!isId('merchant', input.merchant_id))
      throw new ValidationFailed('merchant_id', 'merchant_id must be a merchant id (mer_...)');
    ctx.status = 201;
    ctx.body = await createWebhook(ctx.services.db, input);
  })
  .get('/webhooks', async (ctx) => {
    const merchantId = lastValue(ctx.query.merchant_id);
    if (typeof merchantId !== 'string' || !isId('merchant', merchantId))
      throw new ValidationFailed('merchant_id', 'merchant_id (mer_...) is required');
    ctx.body = await listWebhooks(ctx.services.db, merchantId);
  })
  .get('/webhooks/:id', async (ctx) => {
    ctx.body = await getWebhook(ctx.services.db, webhookId(ctx.params.id));
  })
  .patch('/webhooks/:id', async (ctx) => {
    const id = webhookId(ctx.params.id);
    ctx.body = await updateWebhook(ctx.services.db, id, validatePatch(await readJson(ctx)));
  })
  .post('/webhooks/:id/test', async (ctx) => {
    const id = webhookId(ctx.params.id);
    ctx.status = 202;
    ctx.body = await sendTestEvent({ ...ctx.services, log: ctx.state.log }, id);
  })
  .get('/webhooks/:id/deliveries', async (ctx) => {
    const id = webhookId(ctx.params.id);
    const status = lastValue(ctx.query.status) as (typeof DELIVERY_STATUSES)[number] | undefined;
    if (status !== undefined && !DELIVERY_STATUSES.includes(status))
      throw new ValidationFailed('status', `status must be one of: ${DELIVERY_STATUSES.join(', ')}`);
    const page = {
      limit: parseLimit(lastValue(ctx.query.limit)),
      cursor: parseCursor(lastValue(ctx.query.cursor), 'whd_'),
    };
    ctx.body = await listDeliveries(ctx.services.db, id, page, status);
  })
  .post('/deliveries/:id/replay', async (ctx) => {
    if (!isId('delivery', ctx.params.id)) throw new NotFound('Delivery');
    ctx.status = 202;
    ctx.body = await replayDelivery({ ...ctx.services, log: ctx.state.log }, ctx.params.id, ctx.state.requestId);
  });
