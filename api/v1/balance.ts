import Router from '@koa/router';
import { callerOf } from './caller';
import { balanceOf } from '../../shared/ledger/balance';

/** GET /v1/balance (scope read): the balance of the key's merchant in the key's environment. */
export const balanceRouter = new Router().get('/balance', async (ctx) => {
  const { merchantId, environment } = callerOf(ctx);
  ctx.body = await balanceOf(ctx.services.db, merchantId, environment);
});
