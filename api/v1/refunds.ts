import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, idOf, listOf, MINOR_UNITS, nullable, UNIX_SECONDS } from '../openapi/schemas';
import { createRefund, type RefundInput } from '../../shared/refunds/create';
import { idempotentWrite } from '../pipeline/idempotency';
import { listRefunds } from '../../shared/refunds/read';
import { refundMachine } from '../../shared/operations/kindMachines';
import { MONEY } from '../../shared/validation';

const refundSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    amount: { ...MONEY, description: 'Minor units; default: all that is not refunded yet' },
    reason: { type: 'string', maxLength: 500 },
  },
} as const;

/** The refund object, plus the failure fields of the payment object (docs/decisions.md#payments). */
export const Refund = component(
  'Refund',
  closedObject({
    id: idOf('refund'),
    object: { const: 'refund' },
    transaction_id: idOf('payment', 'The refunded payment'),
    amount: MINOR_UNITS,
    currency: CURRENCY,
    reason: nullable({ type: 'string' }),
    status: { type: 'string', enum: refundMachine.statuses },
    failure_code: nullable({ type: 'string' }),
    failure_message: nullable({ type: 'string' }),
    created: UNIX_SECONDS,
    completed: nullable(UNIX_SECONDS),
  }),
);

export const RefundList = listOf('RefundList', Refund);

/** Refunds of a payment (docs/decisions.md#paths; the checks: docs/decisions.md#provider-operations); the pipeline has checked scope `full` for the POST. */
export const refundsRoutes = defineRoutes([
  route<RefundInput>({
    method: 'POST',
    path: '/payments/:id/refund',
    operationId: 'createRefund',
    summary: 'Refund a payment',
    description:
      'Whole or partial (several partial refunds may follow one another up to amount_charged). The money goes back to the phone that paid; it is taken from balance.available at once and given back if the refund fails. The fee is not given back. Card payments are refunded by the operator, not through the API.',
    tag: 'Refunds',
    scope: 'full',
    params: { id: { description: 'The payment id (`pay_…`)' } },
    body: component('CreateRefund', { ...refundSchema, examples: [{ amount: 500, reason: 'Item out of stock' }, {}] }),
    idempotencyKey: 'optional',
    responses: { 201: { description: 'The refund, `pending` until the provider answers', body: Refund } },
    errors: [
      'refund-exceeds-refundable',
      'payment-not-refundable',
      'card-refund-not-supported',
      'insufficient-balance',
      'operator-unavailable',
      'amount-not-supported',
      'partial-refund-not-supported',
    ],
    async handler(ctx, { body }) {
      const { db, outbox, caches, config, clock } = ctx.services;
      const providerWindowMs = config.providerWindowMs[callerOf(ctx).environment];
      ctx.body = await createRefund(
        { db, outbox, caches, clock, log: ctx.state.log, providerWindowMs, providers: ctx.services.providers },
        callerOf(ctx),
        ctx.params.id,
        body,
        ctx.state.requestId,
        idempotentWrite(ctx, 201),
      );
      ctx.status = 201;
    },
  }),
  route({
    method: 'GET',
    path: '/payments/:id/refunds',
    operationId: 'listRefunds',
    summary: "List a payment's refunds",
    description: 'In the order they were made.',
    tag: 'Refunds',
    scope: 'read',
    params: { id: { description: 'The payment id (`pay_…`)' } },
    responses: { 200: { description: "The payment's refunds", body: RefundList } },
    async handler(ctx) {
      ctx.body = await listRefunds(ctx.services.db, callerOf(ctx), ctx.params.id);
    },
  }),
]);
