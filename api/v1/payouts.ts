import Router from '@koa/router';
import { callerOf } from './caller';
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
    const { db, queues, config } = ctx.services;
    const providerWindowMs = config.providerWindowMs[callerOf(ctx).environment];
    ctx.body = await createPayout({ db, queues, log: ctx.state.log, providerWindowMs }, callerOf(ctx), input, ctx.state.requestId);
    ctx.status = 201;
  })
  .get('/payouts/:id', async (ctx) => {
    ctx.body = await getPayout(ctx.services.db, callerOf(ctx), ctx.params.id);
  })
  .get('/payouts', async (ctx) => {
    const query = validateList({ ...ctx.query });
    ctx.body = await listPayouts(ctx.services.db, callerOf(ctx), query);
  });
