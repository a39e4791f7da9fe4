import Router from '@koa/router';
import { createPayout } from '../../shared/payouts/create';
import { getPayout, listPayouts } from '../../shared/payouts/read';
import { createPayoutSchema, listPayoutsSchema, type ListPayoutsQuery, type PayoutInput } from '../../shared/payouts/schemas';
import { validator } from '../../shared/validation';

const validateCreate = validator<PayoutInput>(createPayoutSchema);
const validateList = validator<ListPayoutsQuery>(listPayoutsSchema);

/** Payouts (B2C, decisions.md). Scope `full` for the POST, signatures and the Idempotency-Key are the pipeline's. */
export const payoutsRouter = new Router()
  .post('/payouts', async (ctx) => {
    const input = validateCreate(ctx.state.body);
    const { merchantId, environment } = ctx.state.auth!;
    const { db, queues } = ctx.services;
    ctx.body = await createPayout({ db, queues, log: ctx.state.log }, { merchantId, environment }, input, ctx.state.requestId);
    ctx.status = 201;
  })
  .get('/payouts/:id', async (ctx) => {
    const { merchantId, environment } = ctx.state.auth!;
    ctx.body = await getPayout(ctx.services.db, { merchantId, environment }, ctx.params.id);
  })
  .get('/payouts', async (ctx) => {
    const query = validateList({ ...ctx.query });
    const { merchantId, environment } = ctx.state.auth!;
    ctx.body = await listPayouts(ctx.services.db, { merchantId, environment }, query);
  });
