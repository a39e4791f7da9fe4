import Router from '@koa/router';
import { callerOf } from './caller';
import { getSettlement, listSettlements, listSettlementsSchema, type ListSettlementsQuery } from '../../shared/settlements/read';
import { validator } from '../../shared/validation';
import { exactJson } from '../../shared/money';
import { listSettlementLines } from '../../shared/statements/settlementLines';

const validateList = validator<ListSettlementsQuery>(listSettlementsSchema);

/** Daily settlement batches (decisions.md "Balance and settlement"); scope `read` is the pipeline's. */
export const settlementsRouter = new Router()
  .get('/settlements/:id', async (ctx) => {
    // figures are exact at any size (a bigint beyond 2^53 - 1 is written with every digit)
    ctx.type = 'application/json';
    ctx.body = exactJson(await getSettlement(ctx.services.db, callerOf(ctx), ctx.params.id));
  })
  .get('/settlements/:id/transactions', async (ctx) => {
    const query = validateList({ ...ctx.query });
    ctx.body = await listSettlementLines(ctx.services.db, callerOf(ctx), ctx.params.id, query);
  })
  .get('/settlements', async (ctx) => {
    const query = validateList({ ...ctx.query });
    ctx.type = 'application/json';
    ctx.body = exactJson(await listSettlements(ctx.services.db, callerOf(ctx), query));
  });
