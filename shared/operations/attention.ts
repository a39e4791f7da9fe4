import type { Executor } from '../db/knex';
import { unixOf } from '../domain/ids';
import type { OperationRow } from './kind';
import { KINDS } from './kinds';

/**
 * What an operator should look at (GET /admin/attention, decisions.md "Faults"): operations
 * still open an hour after their provider window ended. The sweep keeps asking their provider;
 * a person may have to call it.
 */
export const ATTENTION_AFTER_MS = 60 * 60 * 1000;

export interface AttentionItem {
  object: string;
  id: string;
  status: string;
  merchant_id: string;
  environment: string;
  provider: string | null;
  window_ends_at: number;
  last_asked: number | null;
  asks: number;
}

/** Every operation open past its bound, oldest window first. */
export async function openPastBound(db: Executor, now: number, limit = 500): Promise<AttentionItem[]> {
  const bound = new Date(now - ATTENTION_AFTER_MS);
  const found: (AttentionItem & { ends: Date })[] = [];
  for (const kind of Object.values(KINDS)) {
    const rows: OperationRow[] = await kind.model
      .query(db)
      .where(kind.scope ?? {})
      .whereIn('status', kind.machine.open as string[])
      .where('window_ends_at', '<', bound)
      .orderBy('window_ends_at')
      .limit(limit)
      .select('id', 'status', 'merchant_id', 'environment', 'provider', 'window_ends_at', 'asked_at', 'asks');
    for (const r of rows) {
      found.push({ object: kind.name, id: r.id, status: r.status, merchant_id: r.merchant_id, environment: r.environment, provider: r.provider, window_ends_at: unixOf(r.window_ends_at)!, last_asked: unixOf(r.asked_at), asks: r.asks, ends: r.window_ends_at });
    }
  }
  return found.sort((a, b) => a.ends.getTime() - b.ends.getTime()).slice(0, limit).map(({ ends: _ends, ...item }) => item);
}

/** How many operations of each kind are open past their bound (the /metrics gauge). */
export async function countPastBound(db: Executor, now: number): Promise<Record<string, number>> {
  const bound = new Date(now - ATTENTION_AFTER_MS);
  const counts: Record<string, number> = {};
  for (const kind of Object.values(KINDS)) {
    counts[kind.name] = await kind.model.query(db).where(kind.scope ?? {}).whereIn('status', kind.machine.open as string[]).where('window_ends_at', '<', bound).resultSize();
  }
  return counts;
}
