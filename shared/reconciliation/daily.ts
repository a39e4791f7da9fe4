import type { ServiceContext } from '../context';
import { businessDay, dayBounds, previousDay } from './days';
import { NotReconcilable, reconcileDay } from './run';
import { RECONCILED_CONNECTORS, sourceOf } from './sources';

/**
 * The settlement pool's daily run (docs/reconciliation.md#running-it): for each connector, the
 * business day before today once the provider's lag has passed, when it has no finished run
 * yet. An API connector runs when configured; an upload connector once a report covers the day.
 * Safe to run in any number of pool copies and again: a run replaces its own items only.
 */
export async function reconcileDue(ctx: ServiceContext): Promise<string[]> {
  const { timeZone, lagMs } = ctx.config.reconciliation;
  const now = ctx.clock.now();
  const day = previousDay(businessDay(now, timeZone));
  if (now < dayBounds(day, timeZone).end + lagMs) return [];
  const done: string[] = [];
  for (const connector of RECONCILED_CONNECTORS) {
    const source = sourceOf(connector)!;
    if (source.fetch && !ctx.config.connectors[connector as 'pawapay']) continue;
    const finished = await ctx
      .db('reconciliation_runs')
      .where({ connector, business_day: day, status: 'done' })
      .first('id');
    if (finished) continue;
    try {
      await reconcileDay(ctx, connector, day);
      done.push(connector);
    } catch (err) {
      // an upload connector without its report yet is not an error: it runs once the report is uploaded
      if (err instanceof NotReconcilable && !source.fetch) continue;
      ctx.log.error({ connector, day, err: { message: (err as Error).message } }, 'reconciliation run failed');
    }
  }
  return done;
}
