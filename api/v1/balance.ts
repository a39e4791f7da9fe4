import Router from '@koa/router';
import { callerOf } from './caller';
import { balanceOf } from '../../shared/ledger/balance';
import { exactJson } from '../../shared/money';

/** GET /v1/balance (scope read): the balance of the key's merchant in the key's environment, exact at any size. */
export const balanceRouter = new Router().get('/balance', async (ctx) => {
  const { merchantId, environment } = callerOf(ctx);
  ctx.type = 'application/json';
  ctx.body = exactJson(await balanceOf(ctx.services.db, merchantId, environment));
});
