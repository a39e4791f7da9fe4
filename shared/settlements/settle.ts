import type { Executor } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { emitEvent } from '../webhooks/fanout';
import { newId } from '../ids';
import { COVERED_KINDS, lastCutoff, settlementFigures, type CoveredEntry } from '../rules/settlement';
import { LedgerTransaction, Settlement } from '../db/models';
import { settlementView, type SettlementView } from './view';
import type { SettlementRow } from '../db/rows';

/**
 * The daily settlement: one batch per merchant, environment and currency whose covered ledger
 * transactions (shared/rules/settlement.ts) are not yet in a batch, each with its
 * `settlement.completed` event, in one transaction per batch. Safe with any number of
 * settlement workers at once: a per-group advisory lock serialises them, the later one finds the
 * period already settled, and the unique (merchant, environment, currency, period_end) backs it.
 */

type Group = Pick<SettlementRow, 'merchant_id' | 'environment' | 'currency'>;

export interface SettleOptions {
  /** Unix seconds; the batches end at the latest daily cut-off at or before it. */
  now: number;
  /** The daily cut-off, minutes after midnight UTC; default 0 (SETTLEMENT_TIME_UTC "00:00"). */
  cutoffMinutesUtc?: number;
}

/** Settles every group with unsettled transactions before the cut-off; returns the batches made. */
export async function settle(
  deps: TransactDeps,
  { now, cutoffMinutesUtc = 0 }: SettleOptions,
): Promise<SettlementView[]> {
  const periodEnd = lastCutoff(now, cutoffMinutesUtc);
  const groups = (await unsettled(deps.db, periodEnd).distinct('merchant_id', 'environment', 'currency')) as Group[];
  const made: SettlementView[] = [];
  let failed = 0;
  for (const group of groups) {
    // one group's failure (its data, a constraint, a lost connection) is logged and left for the
    // next run: it never stops the batches of the other merchants
    try {
      const batch = await settleGroup(deps, group, periodEnd);
      if (batch) made.push(batch);
    } catch (err) {
      failed += 1;
      deps.log?.error({ err, ...group, periodEnd }, 'settlement of one group failed; the others go on');
    }
  }
  if (made.length || failed) deps.log?.info({ periodEnd, batches: made.length, failed }, 'settlement batches created');
  return made;
}

/** Merchant ledger transactions a batch ending at periodEnd may cover and none has. */
function unsettled(db: Executor, periodEnd: number) {
  return LedgerTransaction.query(db)
    .whereNull('settlement_id')
    .whereNotNull('merchant_id')
    .whereIn('kind', COVERED_KINDS)
    .where('created_at', '<', new Date(periodEnd * 1000));
}

class NothingToSettle extends Error {}

/** Figures as bindings: a bigint goes to Postgres as its exact text. */
function bigintsAsText(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
}

async function settleGroup(deps: TransactDeps, group: Group, periodEnd: number): Promise<SettlementView | null> {
  try {
    return await transact(deps, async (trx, outbox) => {
      await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [
        `settlement/${group.merchant_id}/${group.environment}/${group.currency}`,
      ]);
      const last = (await Settlement.query(trx).where(group).max('period_end as end').first()) as unknown as
        { end: number | null } | undefined;
      if (last?.end != null && last.end >= periodEnd) return null;

      // the batch row first (zero figures), so the covered transactions can point at it; one
      // UPDATE claims them, so the figures below count exactly the transactions it marked
      const id = newId('settlement');
      const created = Math.floor(deps.clock.now() / 1000);
      await Settlement.query(trx).insert({
        id,
        ...group,
        period_start: 0,
        period_end: periodEnd,
        gross: 0,
        fees: 0,
        refunds: 0,
        payouts: 0,
        net: 0,
        count: 0,
        created,
        version: 1,
      });
      const claimed: { kind: string; created_at: Date }[] = await unsettled(trx, periodEnd)
        .where(group)
        .patch({ settlement_id: id })
        .returning(['kind', 'created_at']);
      if (claimed.length === 0) throw new NothingToSettle();

      const sums: (CoveredEntry & { kind: string; amount: string })[] = await trx('ledger_transactions as t')
        // an entry's created_at is its transaction's (one statement): its monthly partition alone is read
        .join('ledger_entries as e', (j) => j.on('e.transaction_id', 't.id').andOn('e.created_at', 't.created_at'))
        .join('ledger_accounts as a', 'a.id', 'e.account_id')
        .where('t.settlement_id', id)
        .groupBy('t.kind', 'a.owner', 'a.kind')
        // summed as numeric and read as text: exact at any size (shared/money.ts)
        .select('t.kind', 'a.owner', 'a.kind as account', trx.raw('sum(e.amount)::text as amount'));
      const kinds = [...new Set(claimed.map((c) => c.kind))];
      const figures = settlementFigures(
        group.merchant_id,
        kinds.map((kind) => ({
          kind,
          transactions: claimed.filter((c) => c.kind === kind).length,
          entries: sums.filter((s) => s.kind === kind),
        })),
      );
      // the first batch starts at its oldest transaction; later ones where the previous ended
      // (a reduce, not Math.min(...): a busy merchant's day would exceed the argument limit)
      const oldest = Math.floor(claimed.reduce((min, c) => Math.min(min, c.created_at.getTime()), Infinity) / 1000);
      const [row]: SettlementRow[] = await Settlement.query(trx)
        .where({ id })
        .patch({ ...bigintsAsText(figures), period_start: last?.end ?? oldest })
        .returning('*');
      const view = settlementView(row);
      await emitEvent(trx, outbox, {
        merchantId: group.merchant_id,
        environment: group.environment,
        type: 'settlement.completed',
        objectId: id,
        objectVersion: row.version,
        object: view,
        at: created * 1000,
      });
      return view;
    });
  } catch (err) {
    // another worker with a later cut-off took them first: nothing left for this batch
    if (err instanceof NothingToSettle) return null;
    throw err;
  }
}
