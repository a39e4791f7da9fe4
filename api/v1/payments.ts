import Router from '@koa/router';
import { callerOf } from './caller';
import { validator } from '../../shared/validation';
import { createPayment } from '../../shared/payments/create';
import { getPayment, listPayments } from '../../shared/payments/read';
import { createPaymentSchema, listPaymentsSchema, type CreatePaymentInput, type ListPaymentsQuery } from '../../shared/payments/schemas';

const validateCreate = validator<CreatePaymentInput>(createPaymentSchema);
const validateList = validator<ListPaymentsQuery>(listPaymentsSchema);

/** Payments (spec 2.2, 2.4; decisions.md paths). Scopes and signatures are the pipeline's; the idempotency key is written with the payment. */
export const paymentsRouter = new Router()
  .post('/payments', async (ctx) => {
    const input = validateCreate(ctx.state.body);
    const { db, queues, config, clock } = ctx.services;
    // an atomic idempotent route (pipeline/request.ts): the key is written with the payment
    const key = ctx.state.idempotency!;
    key.stored = await createPayment({ db, queues, config, clock, log: ctx.state.log }, callerOf(ctx), input, key);
  })
  .get('/payments/:id', async (ctx) => {
    ctx.body = await getPayment(ctx.services.db, callerOf(ctx), ctx.params.id, ctx.services.config.baseUrl);
  })
  .get('/payments', async (ctx) => {
    const query = validateList({ ...ctx.query });
    ctx.body = await listPayments(ctx.services.db, callerOf(ctx), query, ctx.services.config.baseUrl);
  });
