import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context';
import { runSql } from '../db/sql/run';
import {
  ACCOUNT_SUM,
  CLASSIFY_LINES,
  CLASSIFY_MISSING_THERE,
  COUNT_ITEMS,
  DAY_FEES,
  KEEP_RESOLUTIONS,
  POST_FEES,
  SETTLEABLE,
} from '../db/sql/reconciliation';
import { KINDS } from '../kindRegistry';
import { askNow } from '../operations/sweep';
import { postingAccountIds, accountKey } from '../ledger/postings';
import { connectorClearing, connectorFees, providerOwner } from '../rules/ledger';
import type { Currency, Environment } from '../vocabulary';
import { dayBounds } from './days';
import { CATEGORIES, type Category } from '../providers/report';
import { sourceOf } from './sources';

/**
 * One connector's business day reconciled (docs/reconciliation.md): its statement fetched (an
 * API) or found (an upload), every line and every operation of the day in exactly one category,
 * the day's provider fees posted once, the wallet balance compared with the ledger's, and the
 * open operations the provider completed asked about again. Running it again replaces the run's
 * items and posts nothing twice. It never moves a merchant's money.
 */

export class NotReconcilable extends Error {}

export interface RunSummary {
  id: string;
  connector: string;
  day: string;
  counts: Record<Category, number>;
  fees: Record<string, number>;
  balances: BalanceReading[];
  balanceFlagged: boolean;
  settled: { object_id: string; status: string }[];
}

export interface BalanceReading {
  currency: string;
  source: 'api' | 'statement';
  reported: number;
  expected: number;
  difference: number;
  flagged: boolean;
}

/** The environment of a connector's operations: live for the live connectors. */
function environmentOf(ctx: ServiceContext, connector: string): Environment {
  return ctx.providers.byProviderId(connector)?.environment ?? 'live';
}

/** The wallet we expect at the provider: what its clearing account says it holds (clearing is negative while it holds money). */
async function expectedBalance(
  ctx: ServiceContext,
  connector: string,
  environment: Environment,
  currency: string,
  asOf: Date,
): Promise<number> {
  const [r] = await runSql<{ balance: string }>(ctx.db, ACCOUNT_SUM, [
    providerOwner(connector),
    'provider_clearing',
    environment,
    currency,
    asOf,
  ]);
  return -Number(r.balance);
}

export async function reconcileDay(
  ctx: ServiceContext,
  connector: string,
  day: string,
  opts: { force?: boolean } = {},
): Promise<RunSummary> {
  const cfg = ctx.config.reconciliation;
  const source = sourceOf(connector);
  if (!source) throw new NotReconcilable(`no statement source for connector ${connector}`);
  const { start, end } = dayBounds(day, cfg.timeZone);
  const now = ctx.clock.now();
  if (!opts.force && now < end + cfg.lagMs)
    throw new NotReconcilable(
      `${day} is not final before ${new Date(end + cfg.lagMs).toISOString()} (the provider's lag)`,
    );
  const environment = environmentOf(ctx, connector);

  // the statement: fetched from the provider's API, or an upload that covers the day
  const fetched = source.fetch ? await source.fetch(ctx, { day, start, end }) : null;
  const covering = await ctx
    .db('provider_statements')
    .where({ connector, status: 'loaded' })
    .where('period_start', '<=', new Date(start))
    .where('period_end', '>=', new Date(end - 1000))
    .orderBy('loaded_at', 'desc')
    .first('id', 'closing_balance', 'currency', 'period_end');
  if (!covering) throw new NotReconcilable(`no loaded ${connector} statement covers ${day}: upload its report first`);

  const contractBps = cfg.contractFeesBps[connector] ?? null;
  const runId = await ctx.db.transaction(async (trx) => {
    const [row] = await trx('reconciliation_runs')
      .insert({ id: `rec_${randomUUID()}`, connector, business_day: day, status: 'running' })
      .onConflict(['connector', 'business_day'])
      .merge({ status: 'running', started_at: trx.fn.now(), finished_at: null, failure: null })
      .returning('id');
    // the items of a run before: replaced by this one's, their resolutions kept (KEEP_RESOLUTIONS)
    const [{ mark }] = await trx('reconciliation_items')
      .where({ run_id: row.id })
      .select(trx.raw('coalesce(max(id), 0)::bigint::text as mark'));
    await runSql(trx, CLASSIFY_LINES, [connector, day, row.id, contractBps]);
    await runSql(trx, CLASSIFY_MISSING_THERE, [
      connector,
      day,
      row.id,
      Math.floor(start / 1000),
      Math.floor(end / 1000),
    ]);
    await runSql(trx, KEEP_RESOLUTIONS, [row.id, mark]);

    // the provider fees of the day's lines, one posting each, on the connector's accounts
    const fees = await runSql<{ currency: string; fees: string }>(trx, DAY_FEES, [connector, day]);
    if (fees.length) {
      const currencies: string[] = [];
      const feeIds: number[] = [];
      const clearingIds: number[] = [];
      for (const f of fees) {
        const ids = await postingAccountIds(trx, {
          kind: 'provider_fee',
          referenceId: '',
          environment,
          currency: f.currency as Currency,
          merchantId: null,
          entries: [
            { account: connectorFees(connector), amount: -1 },
            { account: connectorClearing(connector), amount: 1 },
          ],
        });
        currencies.push(f.currency);
        feeIds.push(ids.get(accountKey(connectorFees(connector)))!);
        clearingIds.push(ids.get(accountKey(connectorClearing(connector)))!);
      }
      await runSql(trx, POST_FEES, [connector, day, environment, feeIds, clearingIds, currencies]);
    }
    return row.id as string;
  });

  const counts = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  for (const r of await runSql<{ category: Category; n: number }>(ctx.db, COUNT_ITEMS, [runId]))
    counts[r.category] = r.n;
  const fees: Record<string, number> = {};
  for (const f of await runSql<{ currency: string; fees: string }>(ctx.db, DAY_FEES, [connector, day]))
    fees[f.currency] = Number(f.fees);

  // an open operation the provider completed or failed: its status query settles it (the sweep's path, never a guess)
  const settled: { object_id: string; status: string }[] = [];
  for (const s of await runSql<{ item_id: number; object_kind: string; object_id: string; method: string | null }>(
    ctx.db,
    SETTLEABLE,
    [runId],
  )) {
    const kind =
      s.object_kind === 'payment' && s.method === 'card'
        ? KINDS.card_payment
        : KINDS[s.object_kind as keyof typeof KINDS];
    if (!kind) continue;
    let outcome: string;
    try {
      outcome = await askNow(ctx, kind, s.object_id);
    } catch (err) {
      outcome = 'error';
      ctx.log.warn(
        { id: s.object_id, err: { message: (err as Error).message } },
        'reconciliation: status query failed',
      );
    }
    const after = await ctx.db(kind.model.tableName).where({ id: s.object_id }).first('status');
    const open = ['pending', 'processing'].includes(after?.status);
    settled.push({ object_id: s.object_id, status: after?.status ?? outcome });
    await ctx
      .db('reconciliation_items')
      .where({ id: s.item_id })
      .update({
        details: ctx.db.raw(`details || ?::jsonb`, [
          JSON.stringify({ status_query: outcome, status_after: after?.status }),
        ]),
        ...(open ? {} : { resolved_at: new Date(now) }),
      });
  }

  // the wallet: the provider's reported balance (its API now, else the statement's closing balance) beside the ledger's
  const balances: BalanceReading[] = [];
  const readings: { currency: string; reported: number; source: 'api' | 'statement'; asOf: Date }[] = [];
  if (fetched?.wallets)
    for (const w of fetched.wallets) readings.push({ ...w, source: 'api', asOf: new Date(8.64e15) });
  else if (covering.closing_balance !== null && covering.currency)
    readings.push({
      currency: covering.currency,
      reported: Number(covering.closing_balance),
      source: 'statement',
      asOf: covering.period_end,
    });
  for (const r of readings) {
    const expected = await expectedBalance(ctx, connector, environment, r.currency, r.asOf);
    const difference = r.reported - expected;
    const flagged = Math.abs(difference) > cfg.balanceThreshold;
    balances.push({ currency: r.currency, source: r.source, reported: r.reported, expected, difference, flagged });
    await ctx
      .db('provider_balance_readings')
      .insert({
        connector,
        currency: r.currency,
        source: r.source,
        business_day: day,
        reported: r.reported,
        expected,
        difference,
        flagged,
        read_at: new Date(now),
      })
      .onConflict(['connector', 'currency', 'source', 'business_day'])
      .merge();
  }
  const balanceFlagged = balances.some((b) => b.flagged);

  await ctx
    .db('reconciliation_runs')
    .where({ id: runId })
    .update({
      status: 'done',
      counts: JSON.stringify(counts),
      provider_fees: JSON.stringify(fees),
      balances: JSON.stringify(balances),
      balance_flagged: balanceFlagged,
      finished_at: new Date(now),
    });
  return { id: runId, connector, day, counts, fees, balances, balanceFlagged, settled };
}
