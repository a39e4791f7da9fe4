import Router from '@koa/router';
import { OPERATORS, MSISDN_PATTERN } from '../../shared/domain/msisdn';
import { createPayout, type PayoutInput } from '../../shared/payouts/create';
import { getPayout } from '../../shared/payouts/read';
import { MONEY, validator } from '../../shared/validation';

const validatePayout = validator<PayoutInput>({
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'currency', 'operator', 'phone', 'reference'],
  properties: {
    amount: MONEY,
    currency: { type: 'string', enum: ['USD', 'CDF'] },
    method: { type: 'string', enum: ['mobile_money'] },
    operator: { type: 'string', enum: OPERATORS },
    phone: { type: 'string', pattern: MSISDN_PATTERN },
    reference: { type: 'string', minLength: 1, maxLength: 255 },
    description: { type: 'string', maxLength: 1000 },
    metadata: {
      type: 'object',
      maxProperties: 20,
      propertyNames: { maxLength: 40 },
      additionalProperties: { anyOf: [{ type: 'string', maxLength: 500 }, { type: 'number' }, { type: 'boolean' }] },
    },
  },
});

/** Payouts (B2C, decisions.md); the pipeline has checked scope `full` and the Idempotency-Key for the POST. */
export const payoutsRouter = new Router()
  .post('/payouts', async (ctx) => {
    const input = validatePayout(ctx.state.body);
    const { merchantId, environment } = ctx.state.auth!;
    ctx.status = 201;
    ctx.body = await createPayout(ctx.services, { merchantId, environment }, input, ctx.state.requestId);
  })
  .get('/payouts/:id', async (ctx) => {
    const { merchantId, environment } = ctx.state.auth!;
    ctx.body = await getPayout(ctx.services.db, { merchantId, environment }, ctx.params.id);
  });
