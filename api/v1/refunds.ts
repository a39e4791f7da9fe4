import Router from '@koa/router';
import { callerOf } from './caller';
import { createRefund, type RefundInput } from '../../shared/refunds/create';
import { listRefunds } from '../../shared/refunds/read';
import { MONEY, validator } from '../../shared/validation';

const validateRefund = validator<RefundInput>({
  type: 'object',
  additionalProperties: false,
  properties: {
    amount: MONEY,
    reason: { type: 'string', maxLength: 500 },
  },
});

/** Refunds of a payment (spec 2.3, decisions.md paths); the pipeline has checked scope `full` for the POST. */
export const refundsRouter = new Router()
  .post('/payments/:id/refund', async (ctx) => {
    const input = validateRefund(ctx.state.body);
    const { db, queues, config } = ctx.services;
    const providerWindowMs = config.providerWindowMs[callerOf(ctx).environment];
    ctx.body = await createRefund({ db, queues, log: ctx.state.log, providerWindowMs }, callerOf(ctx), ctx.params.id, input, ctx.state.requestId);
    ctx.status = 201;
  })
  .get('/payments/:id/refunds', async (ctx) => {
    ctx.body = await listRefunds(ctx.services.db, callerOf(ctx), ctx.params.id);
  });
