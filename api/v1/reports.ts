import Router from '@koa/router';
import { callerOf } from './caller';
import { parseReportRange, transactionsCsv } from '../../shared/statements/csv';

/** Statements as files (decisions.md "Integrator's kit"); scope read is the pipeline's. */
export const reportsRouter = new Router().get('/reports/transactions.csv', async (ctx) => {
  const range = parseReportRange(ctx.query);
  ctx.type = 'text/csv; charset=utf-8';
  ctx.set('Content-Disposition', `attachment; filename="transactions-${range.from}-${range.to}.csv"`);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = transactionsCsv(ctx.services.db, callerOf(ctx), range);
});
