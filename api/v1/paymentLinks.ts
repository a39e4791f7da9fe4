import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, ENVIRONMENT, idOf, METADATA, MINOR_UNITS, nullable, pageOf, UNIX_SECONDS } from '../openapi/schemas';
import { idempotentWrite } from '../pipeline/idempotency';
import { createPaymentLink, deactivatePaymentLink, getPaymentLink, listPaymentLinks } from '../../shared/links/service';
import {
  createPaymentLinkSchema,
  LINK_METHODS,
  listPaymentLinksSchema,
  type CreatePaymentLinkInput,
  type ListPaymentLinksQuery,
} from '../../shared/links/schemas';

/** The payment_link object (docs/decisions.md#payment-links). */
export const PaymentLink = component(
  'PaymentLink',
  closedObject({
    id: idOf('paymentLink'),
    object: { const: 'payment_link' },
    url: { type: 'string', format: 'uri', description: 'The hosted page to send the client: `{base_url}/pay/{id}`' },
    active: {
      type: 'boolean',
      description:
        'Whether it takes payments now: false once deactivated, expired, or (single use) once a payment through it succeeded',
    },
    environment: ENVIRONMENT,
    currency: CURRENCY,
    amount: nullable({ ...MINOR_UNITS, description: 'The amount to pay; null: the client types it' }),
    min_amount: nullable(MINOR_UNITS),
    max_amount: nullable(MINOR_UNITS),
    description: { type: 'string' },
    methods: { type: 'array', items: { type: 'string', enum: LINK_METHODS } },
    single_use: { type: 'boolean' },
    expires_at: nullable(UNIX_SECONDS),
    return_url: nullable({ type: 'string', format: 'uri' }),
    metadata: METADATA,
    created: UNIX_SECONDS,
    deactivated: nullable({ ...UNIX_SECONDS, description: 'When it was deactivated' }),
  }),
);

export const PaymentLinkList = pageOf('PaymentLinkList', PaymentLink);

const LINK_ID = { description: 'The payment link id (`plink_…`)' };

/**
 * Payment links (docs/decisions.md#payment-links): what a merchant without a developer
 * sends its client instead of calling POST /v1/payments. The payments made through a link are
 * listed by GET /v1/payments?payment_link=.
 */
export const paymentLinksRoutes = defineRoutes([
  route<CreatePaymentLinkInput>({
    method: 'POST',
    path: '/payment_links',
    operationId: 'createPaymentLink',
    summary: 'Create a payment link',
    description:
      "A link to the hosted page `/pay/{id}`, where the client pays by mobile money or card. Each payment through it is an ordinary payment (fees, limits, events) with `payment_link` set and the reference `<link id>-<n>`. Without `amount` the client types it, within `min_amount` and `max_amount` and the merchant's limits.",
    tag: 'Payment links',
    scope: 'payments',
    body: component('CreatePaymentLink', {
      ...createPaymentLinkSchema,
      examples: [
        { amount: 2500, currency: 'USD', description: 'Robe wax' },
        {
          currency: 'CDF',
          description: 'Don',
          min_amount: 100000,
          max_amount: 5000000,
          methods: ['mobile_money'],
          single_use: true,
          return_url: 'https://shop.example.cd/merci',
        },
      ],
    }),
    idempotencyKey: 'required',
    responses: { 201: { description: 'The payment link', body: PaymentLink } },
    // the same signed request (same body, same second) under another key: the replay guard's (docs/decisions.md#replayed-signed-requests)
    errors: ['request-replayed'],
    async handler(ctx, { body }) {
      const { db, outbox, config, clock } = ctx.services;
      ctx.body = await createPaymentLink(
        { db, outbox, config, clock, log: ctx.state.log },
        callerOf(ctx),
        body,
        idempotentWrite(ctx, 201)!,
      );
      ctx.status = 201;
    },
  }),
  route({
    method: 'GET',
    path: '/payment_links/:id',
    operationId: 'getPaymentLink',
    summary: 'Retrieve a payment link',
    tag: 'Payment links',
    scope: 'read',
    params: { id: LINK_ID },
    responses: { 200: { description: 'The payment link', body: PaymentLink } },
    async handler(ctx) {
      const { db, config, clock } = ctx.services;
      ctx.body = await getPaymentLink(db, callerOf(ctx), ctx.params.id, config.baseUrl, clock.now());
    },
  }),
  route<never, ListPaymentLinksQuery>({
    method: 'GET',
    path: '/payment_links',
    operationId: 'listPaymentLinks',
    summary: 'List payment links',
    description: 'Newest first, cursor-paginated.',
    tag: 'Payment links',
    scope: 'read',
    query: listPaymentLinksSchema,
    responses: { 200: { description: 'A page of payment links', body: PaymentLinkList } },
    async handler(ctx, { query }) {
      const { db, config, clock } = ctx.services;
      ctx.body = await listPaymentLinks(db, callerOf(ctx), query, config.baseUrl, clock.now());
    },
  }),
  route({
    method: 'POST',
    path: '/payment_links/:id/deactivate',
    operationId: 'deactivatePaymentLink',
    summary: 'Deactivate a payment link',
    description:
      'The link takes no more payments; those already open go on to their end. Deactivating a deactivated link answers it as it is; an expired or used-up link answers 410 `link-inactive`. Takes no fields: send `{}` or an empty body (any field is 400 `validation-failed`).',
    tag: 'Payment links',
    scope: 'payments',
    params: { id: LINK_ID },
    body: { type: 'object', additionalProperties: false, properties: {} },
    responses: { 200: { description: 'The payment link, deactivated', body: PaymentLink } },
    errors: ['link-inactive'],
    async handler(ctx) {
      const { db, config, clock } = ctx.services;
      ctx.body = await deactivatePaymentLink(db, callerOf(ctx), ctx.params.id, config.baseUrl, clock.now());
    },
  }),
]);
