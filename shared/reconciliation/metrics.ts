import type { Executor } from '../db/knex';
import { runSql } from '../db/sql/run';
import { LATEST_WALLET_READINGS, UNRESOLVED_ITEMS } from '../db/sql/reconciliation';
import { REVIEW_MS } from '../operations/attention';
import { CONNECTOR_NAMES, CONNECTORS } from '../providers/table';
import { CURRENCIES } from '../vocabulary';
import { CATEGORIES, type Category } from '../providers/report';

/**
 * What /metrics serves of the reconciliation (docs/reconciliation.md#seeing-it), on closed label
 * sets: the live connectors of the connector table (a provider with books of its own), the
 * categories, the currencies. A value outside them (a run of a connector since removed) is left out.
 */

export const METRIC_CONNECTORS: readonly string[] = CONNECTOR_NAMES.filter(
  (n) => (CONNECTORS[n] as { environment: string }).environment === 'live',
);

export interface ReconciliationMetrics {
  /** every connector × category: the items not resolved (0 where none) */
  items: { connector: string; category: Category; n: number }[];
  /** every connector: how long the oldest mismatch not resolved has waited, seconds (0: none) */
  oldestUnresolved: { connector: string; seconds: number }[];
  /** each connector and currency with a reading: its latest wallet difference (reported − expected, minor units) */
  walletDifference: { connector: string; currency: string; difference: number }[];
}

export async function readReconciliationMetrics(db: Executor, now: number): Promise<ReconciliationMetrics> {
  const rows = await runSql<{ connector: string; category: Category; n: number; oldest: number }>(
    db,
    UNRESOLVED_ITEMS,
    [new Date(now - REVIEW_MS), new Date(now)],
  );
  const items: ReconciliationMetrics['items'] = [];
  const oldestUnresolved: ReconciliationMetrics['oldestUnresolved'] = [];
  for (const connector of METRIC_CONNECTORS) {
    let oldest = 0;
    for (const category of CATEGORIES) {
      const r = rows.find((x) => x.connector === connector && x.category === category);
      items.push({ connector, category, n: r?.n ?? 0 });
      if (r && category !== 'matched') oldest = Math.max(oldest, Number(r.oldest));
    }
    oldestUnresolved.push({ connector, seconds: Math.max(0, oldest) });
  }
  const walletDifference = (
    await runSql<{ connector: string; currency: string; difference: string }>(db, LATEST_WALLET_READINGS, [])
  )
    .filter((r) => METRIC_CONNECTORS.includes(r.connector) && (CURRENCIES as readonly string[]).includes(r.currency))
    .map((r) => ({ connector: r.connector, currency: r.currency, difference: Number(r.difference) }));
  return { items, oldestUnresolved, walletDifference };
}
