import { callerOf } from './caller';
import { closedObject, defineRoutes, route } from '../routeTable';
import { CSV_COLUMNS, MAX_REPORT_SECONDS, parseReportRange, transactionsCsv } from '../../shared/statements/csv';

const UNIX_QUERY = { type: 'string', pattern: '^[0-9]{1,11}$', description: 'Unix seconds' } as const;

/** Statements as files (docs/decisions.md#integrators-kit); scope read is the pipeline's. */
export const reportsRoutes = defineRoutes([
  route<never, { from: string; to: string }>({
    method: 'GET',
    path: '/reports/transactions.csv',
    operationId: 'exportTransactions',
    summary: 'Export transactions as CSV',
    description: `The ledger lines of the key's environment created from \`from\` (included) to \`to\` (excluded), oldest first, streamed as CSV with a header line: \`${CSV_COLUMNS.join(',')}\`. At most 31 days (${MAX_REPORT_SECONDS} s) at once. Text fields that a spreadsheet would read as a formula start with an apostrophe.`,
    tag: 'Balance and settlements',
    scope: 'read',
    query: closedObject({
      from: UNIX_QUERY,
      to: { ...UNIX_QUERY, description: 'Unix seconds, after `from`, at most 31 days later' },
    }),
    responses: { 200: { description: 'The CSV file', contentType: 'text/csv', body: { type: 'string' } } },
    errors: ['validation-failed'],
    async handler(ctx) {
      const range = parseReportRange(ctx.query);
      ctx.type = 'text/csv; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="transactions-${range.from}-${range.to}.csv"`);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = transactionsCsv(ctx.services.db, callerOf(ctx), range);
    },
  }),
]);
