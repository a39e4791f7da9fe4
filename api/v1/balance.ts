import Router from '@koa/router';
import { balanceOf } from '../../shared/ledger/balance';

/** GET /v1/balance (scope read): the balance of the key's merchant in the key's environment. */
export const balanceRouter = new Router().get('/balance', async (ctx) => {
  const { merchantId, environment } = ctx.state.auth!;
  ctx.body = await balanceOf(ctx.services.db, merchantId, environment);
});
