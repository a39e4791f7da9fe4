import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, ENVIRONMENT, idOf, METADATA, MINOR_UNITS, nullable, pageOf, UNIX_SECONDS } from '../openapi/schemas';
import { createPayout } from '../../shared/payouts/create';
import { idempotentWrite } from '../pipeline/idempotency';
import { getPayout, listPayouts } from '../../shared/payouts/read';
import {
  createPayoutSchema,
  listPayoutsSchema,
  type ListPayoutsQuery,
  type PayoutInput,
} from '../../shared/payouts/schemas';
import { payoutMachine } from '../../shared/operations/kindMachines';
import { OPERATORS } from '../../shared/vocabulary';

/** The payout object (docs/decisions.md#payouts). */
export const Payout = component(
  'Payout',
  closedObject({
    id: idOf('payout'),
    object: { const: 'payout' },
    status: { type: 'string', enum: payoutMachine.statuses },
    amount: MINOR_UNITS,
    fee: MINOR_UNITS,
    currency: CURRENCY,
    method: { const: 'mobile_money' },
    operator: { type: 'string', enum: OPERATORS },
    phone: { type: 'string', description: 'MSISDN: 243 and 9 digits' },
    reference: { type: 'string' },
    description: nullable({ type: 'string' }),
    environment: ENVIRONMENT,
    failure_code: nullable({ type: 'string' }),
    failure_message: nullable({ type: 'string' }),
    created: UNIX_SECONDS,
    completed: nullable(UNIX_SECONDS),
    metadata: METADATA,
  }),
);

export const PayoutList = pageOf('PayoutList', Payout);

/** Payouts (B2C, docs/decisions.md#payouts). Scope `full` for the POST, signatures and the Idempotency-Key are the pipeline's. */
export const payoutsRoutes = defineRoutes([
  route<PayoutInput>({
    method: 'POST',
    path: '/payouts',
    operationId: 'createPayout',
    summary: 'Pay out to a mobile-money wallet',
    description:
      'amount + fee is taken from balance.available at once and given back if the payout fails. Outcome by webhook (`payout.succeeded`, `payout.failed`).',
    tag: 'Payouts',
    scope: 'full',
    body: component('CreatePayout', {
      ...createPayoutSchema,
      examples: [
        {
          amount: 10000,
          currency: 'CDF',
          operator: 'airtel',
          phone: '243990000001',
          reference: 'payout-77',
          description: 'Seller payout',
        },
      ],
    }),
    idempotencyKey: 'required',
    responses: { 201: { description: 'The payout', body: Payout } },
    errors: [
      'operator-mismatch',
      'reference-conflict',
      'insufficient-balance',
      'operator-unavailable',
      'amount-not-supported',
    ],
    async handler(ctx, { body }) {
      const { db, outbox, caches, config, clock } = ctx.services;
      const providerWindowMs = config.providerWindowMs[callerOf(ctx).environment];
      ctx.body = await createPayout(
        { db, outbox, caches, clock, log: ctx.state.log, providerWindowMs, providers: ctx.services.providers },
        callerOf(ctx),
        body,
        ctx.state.requestId,
        idempotentWrite(ctx, 201),
      );
      ctx.status = 201;
    },
  }),
  route({
    method: 'GET',
    path: '/payouts/:id',
    operationId: 'getPayout',
    summary: 'Retrieve a payout',
    tag: 'Payouts',
    scope: 'read',
    params: { id: { description: 'The payout id (`po_…`)' } },
    responses: { 200: { description: 'The payout', body: Payout } },
    async handler(ctx) {
      ctx.body = await getPayout(ctx.services.db, callerOf(ctx), ctx.params.id);
    },
  }),
  route<never, ListPayoutsQuery>({
    method: 'GET',
    path: '/payouts',
    operationId: 'listPayouts',
    summary: 'List payouts',
    description: 'Newest first, cursor-paginated.',
    tag: 'Payouts',
    scope: 'read',
    query: listPayoutsSchema,
    responses: { 200: { description: 'A page of payouts', body: PayoutList } },
    async handler(ctx, { query }) {
      ctx.body = await listPayouts(ctx.services.db, callerOf(ctx), query);
    },
  }),
]);
