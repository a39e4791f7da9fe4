import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, ENVIRONMENT, idOf, METADATA, MINOR_UNITS, nullable, pageOf, UNIX_SECONDS } from '../openapi/schemas';
import { createPayment } from '../../shared/payments/create';
import { idempotentWrite } from '../pipeline/idempotency';
import { getPayment, listPayments } from '../../shared/payments/read';
import {
  createPaymentSchema,
  listPaymentsSchema,
  type CreatePaymentInput,
  type ListPaymentsQuery,
} from '../../shared/payments/schemas';
import { paymentMachine } from '../../shared/operations/kindMachines';

/** The payment object (docs/decisions.md#payments and docs/decisions.md#cards-hosted-checkout). */
export const Payment = component(
  'Payment',
  closedObject(
    {
      id: idOf('payment'),
      object: { const: 'payment' },
      status: { type: 'string', enum: paymentMachine.statuses },
      method: { type: 'string', enum: ['mobile_money', 'card'] },
      environment: ENVIRONMENT,
      currency: CURRENCY,
      amount_charged: { ...MINOR_UNITS, description: 'What the client pays' },
      amount_net: { ...MINOR_UNITS, description: 'What the merchant is credited' },
      fee: MINOR_UNITS,
      fee_bearer: { type: 'string', enum: ['merchant', 'customer'] },
      amount_refunded: { ...MINOR_UNITS, description: 'Sum of the pending and succeeded refunds' },
      reference: { type: 'string' },
      payment_link: nullable({
        type: 'string',
        description:
          'The payment link (`plink_…`) the payment was made through; null for a payment created through the API',
      }),
      provider: nullable({ type: 'string', description: 'The provider handling the payment' }),
      provider_ref: nullable({ type: 'string', description: "The provider's reference, once it has one" }),
      failure_code: nullable({ type: 'string' }),
      failure_message: nullable({ type: 'string' }),
      created: UNIX_SECONDS,
      completed: nullable(UNIX_SECONDS),
      metadata: METADATA,
      checkout_url: { type: 'string', format: 'uri', description: 'Card payments: where to send the client' },
      card: nullable({
        ...closedObject({
          brand: { type: 'string' },
          last4: { type: 'string' },
          exp_month: { type: 'integer' },
          exp_year: { type: 'integer' },
        }),
        description: 'Card payments, once charged',
      }),
    },
    ['checkout_url', 'card'],
  ),
);

export const PaymentList = pageOf('PaymentList', Payment);

const PAYMENT_ID = { description: 'The payment id (`pay_…`)' };

/** Payments (docs/decisions.md#payments, docs/decisions.md#paths). Scopes and signatures are the pipeline's; the idempotency key is written with the payment. */
export const paymentsRoutes = defineRoutes([
  route<CreatePaymentInput>({
    method: 'POST',
    path: '/payments',
    operationId: 'createPayment',
    summary: 'Create a payment',
    description:
      'Mobile money: created `processing`; the client gets a push prompt on the phone. Card: created `pending` with `checkout_url`, where the client pays. The outcome comes by webhook (`payment.succeeded`, `payment.failed`, `payment.cancelled`) or `GET /v1/payments/{id}`. Body at most 100 KB.',
    tag: 'Payments',
    scope: 'payments',
    body: component('CreatePayment', {
      ...createPaymentSchema,
      examples: [
        {
          amount: 2500,
          currency: 'USD',
          method: 'mobile_money',
          operator: 'vodacom',
          phone: '243990000001',
          reference: 'order-1042',
          metadata: { cart: '1042' },
        },
        {
          amount: 2500,
          currency: 'USD',
          method: 'card',
          reference: 'order-1043',
          customer_email: 'client@example.com',
          customer_name: 'A. Client',
          return_url: 'https://shop.example.cd/paid',
        },
      ],
    }),
    idempotencyKey: 'required',
    responses: { 201: { description: 'The payment', body: Payment } },
    errors: [
      'operator-mismatch',
      'reference-conflict',
      'amount-over-limit',
      'operator-unavailable',
      'amount-not-supported',
      'method-unavailable',
    ],
    async handler(ctx, { body }) {
      const { db, outbox, batches, caches, config, clock } = ctx.services;
      // the Idempotency-Key (required: the pipeline checked it) is written with the payment
      ctx.body = await createPayment(
        { db, outbox, batches, caches, config, clock, providers: ctx.services.providers, log: ctx.state.log },
        callerOf(ctx),
        body,
        idempotentWrite(ctx, 201)!,
      );
      ctx.status = 201;
    },
  }),
  route({
    method: 'GET',
    path: '/payments/:id',
    operationId: 'getPayment',
    summary: 'Retrieve a payment',
    tag: 'Payments',
    scope: 'read',
    params: { id: PAYMENT_ID },
    responses: { 200: { description: 'The payment', body: Payment } },
    async handler(ctx) {
      ctx.body = await getPayment(ctx.services.db, callerOf(ctx), ctx.params.id, ctx.services.config.baseUrl);
    },
  }),
  route<never, ListPaymentsQuery>({
    method: 'GET',
    path: '/payments',
    operationId: 'listPayments',
    summary: 'List payments',
    description: 'Newest first, cursor-paginated.',
    tag: 'Payments',
    scope: 'read',
    query: listPaymentsSchema,
    responses: { 200: { description: 'A page of payments', body: PaymentList } },
    async handler(ctx, { query }) {
      ctx.body = await listPayments(ctx.services.db, callerOf(ctx), query, ctx.services.config.baseUrl);
    },
  }),
]);
