import Router from '@koa/router';
import { lastValue } from '../../query';
import { readJson } from '../../body';
import { closedObject } from '../../routeTable';
import { validator } from '../../../shared/validation';
import { PayloadTooLarge, ValidationFailed } from '../../../shared/errors';
import { loadStatement, ReportTooLarge } from '../../../shared/reconciliation/load';
import { ReportError } from '../../../shared/providers/report';
import { parserOf, RECONCILED_CONNECTORS } from '../../../shared/reconciliation/sources';
import {
  getRun,
  itemsCsv,
  listItems,
  listRuns,
  MAX_NOTE_CHARS,
  parseCategory,
  resolveItem,
} from '../../../shared/reconciliation/read';
import { NotReconcilable, reconcileDay } from '../../../shared/reconciliation/run';
import { dayBounds, isDay } from '../../../shared/reconciliation/days';

const validateRun = validator<{ connector: string; day: string }>(
  closedObject({
    connector: { type: 'string', enum: RECONCILED_CONNECTORS },
    day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
  }),
);

const validateResolve = validator<{ note: string }>(
  closedObject({ note: { type: 'string', minLength: 1, maxLength: MAX_NOTE_CHARS, pattern: '\\S' } }),
);

/**
 * The reconciliation's operator routes (docs/reconciliation.md): upload a provider's report
 * (streamed, one transaction), run a day, list the runs and a run's items (paged, or CSV).
 */
export const reconciliationAdminRouter = new Router({ prefix: '/admin' })
  // the body is the report itself, read as it arrives; ?connector= (&format=) or X-Connector / X-Report-Format;
  // &from=&to= (business days) name the period of a report that does not carry its own
  .post('/reconciliation/statements', async (ctx) => {
    const connector = lastValue(ctx.query.connector) ?? ctx.get('X-Connector');
    const format = lastValue(ctx.query.format) ?? (ctx.get('X-Report-Format') || undefined);
    if (!connector || !RECONCILED_CONNECTORS.includes(connector))
      throw new ValidationFailed('connector', `connector must be one of: ${RECONCILED_CONNECTORS.join(', ')}`);
    const parser = parserOf(connector, format);
    if (!parser) throw new ValidationFailed('format', `format is not a report format of ${connector}`);
    const { maxReportBytes, timeZone } = ctx.services.config.reconciliation;
    const from = lastValue(ctx.query.from);
    const to = lastValue(ctx.query.to) ?? from;
    if (to !== undefined && (from === undefined || !isDay(from)))
      throw new ValidationFailed('from', 'from must be a day (YYYY-MM-DD)');
    if (to !== undefined && (!isDay(to) || to < from!))
      throw new ValidationFailed('to', 'to must be a day (YYYY-MM-DD), not before from');
    const declared = ctx.request.length;
    if (declared !== undefined && declared > maxReportBytes) throw new PayloadTooLarge();
    try {
      const result = await loadStatement(
        ctx.services.db,
        {
          connector,
          source: 'upload',
          format: parser.format,
          providerStatementId: null,
          ...(from && to
            ? {
                periodStart: new Date(dayBounds(from, timeZone).start),
                periodEnd: new Date(dayBounds(to, timeZone).end),
              }
            : {}),
          timeZone,
          maxBytes: maxReportBytes,
        },
        ctx.req,
        parser,
      );
      ctx.status = result.duplicate ? 200 : 201;
      ctx.body = { object: 'statement', ...result };
    } catch (err) {
      if (err instanceof ReportTooLarge) throw new PayloadTooLarge();
      if (err instanceof ReportError) throw new ValidationFailed('body', `the report cannot be read: ${err.message}`);
      throw err;
    }
  })
  .post('/reconciliations', async (ctx) => {
    const input = validateRun(await readJson(ctx));
    if (!isDay(input.day)) throw new ValidationFailed('day', 'day must be a date, YYYY-MM-DD');
    try {
      const run = await reconcileDay(ctx.services, input.connector, input.day);
      ctx.status = 201;
      ctx.body = await getRun(ctx.services.db, run.id);
    } catch (err) {
      if (err instanceof NotReconcilable) throw new ValidationFailed('day', err.message);
      throw err;
    }
  })
  .get('/reconciliations', async (ctx) => {
    ctx.body = await listRuns(ctx.services.db, {
      connector: lastValue(ctx.query.connector),
      limit: lastValue(ctx.query.limit),
    });
  })
  .get('/reconciliations/:id', async (ctx) => {
    ctx.body = await getRun(ctx.services.db, ctx.params.id);
  })
  // an operator handled a mismatch: it leaves /admin/attention (docs/reconciliation.md#resolving-an-item)
  .post('/reconciliation/items/:id/resolve', async (ctx) => {
    const input = validateResolve(await readJson(ctx));
    ctx.body = await resolveItem(ctx.services.db, ctx.params.id, input.note.trim(), ctx.services.clock.now());
  })
  // ?format=csv (or Accept: text/csv): every item of the run, streamed
  .get('/reconciliations/:id/items', async (ctx) => {
    const category = lastValue(ctx.query.category);
    const csv = lastValue(ctx.query.format) === 'csv' || ctx.get('Accept') === 'text/csv';
    if (csv) {
      await getRun(ctx.services.db, ctx.params.id);
      ctx.type = 'text/csv; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="${ctx.params.id}.csv"`);
      ctx.body = itemsCsv(ctx.services.db, ctx.params.id, parseCategory(category));
      return;
    }
    ctx.body = await listItems(ctx.services.db, ctx.params.id, {
      category,
      limit: lastValue(ctx.query.limit),
      starting_after: lastValue(ctx.query.starting_after),
    });
  });
