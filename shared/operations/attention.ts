import type { Executor } from '../db/knex';
import { unixOf } from '../ids';
import type { OperationKind } from './kind';
import type { OperationRow } from '../db/rows';

/** The kinds of operation to look at (the composition root's registry: shared/kindRegistry.ts). */
type KindTable = Record<string, OperationKind<any, any, any>>;

/**
 * What an operator should look at (GET /admin/attention, docs/decisions.md#faults-and-limits):
 * - `open-past-bound`: operations still open an hour after their provider window ended. The
 *   sweep keeps asking their provider; a person may have to call it.
 * - `late-success`: a provider reported success after it had said failed, or after the
 *   cancellation: the payment was taken (docs/decisions.md#late-success); the provider contradicted
 *   itself, so a person checks.
 * - `never-sent`: a correctly signed report about an operation never sent to that provider (a
 *   card payment never charged): recorded and not applied.
 * - `amount-mismatch`: a provider's callback said another amount or currency moved than the
 *   operation asked for: recorded and not applied.
 * Contradictions stay listed for REVIEW_MS after they happened.
 */
export const ATTENTION_AFTER_MS = 60 * 60 * 1000;
export const REVIEW_MS = 30 * 24 * 3600 * 1000;

export type AttentionReason = 'open-past-bound' | 'late-success' | 'never-sent' | 'amount-mismatch';

export interface AttentionItem {
  reason: AttentionReason;
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

const FIELDS = ['id', 'status', 'merchant_id', 'environment', 'provider', 'window_ends_at', 'asked_at', 'asks'];
const COLUMNS = FIELDS.map((c) => `o.${c}`);

/** The open operations of `kind` whose window ended more than ATTENTION_AFTER_MS before `now`. */
function pastBound(db: Executor, kind: OperationKind<any, any, any>, now: number) {
  return kind.model
    .query(db)
    .where(kind.scope ?? {})
    .whereIn('status', kind.machine.open as string[])
    .where('window_ends_at', '<', new Date(now - ATTENTION_AFTER_MS));
}

function itemOf(reason: AttentionReason, object: string, r: OperationRow): AttentionItem {
  return {
    reason,
    object,
    id: r.id,
    status: r.status,
    merchant_id: r.merchant_id,
    environment: r.environment,
    provider: r.provider,
    window_ends_at: unixOf(r.window_ends_at)!,
    last_asked: unixOf(r.asked_at),
    asks: r.asks,
  };
}

/** What a provider contradicted within REVIEW_MS: late successes and reports about operations never sent, newest first. */
async function contradictions(db: Executor, kinds: KindTable, now: number, limit: number): Promise<AttentionItem[]> {
  const since = new Date(now - REVIEW_MS);
  const found: { item: AttentionItem; at: Date }[] = [];
  for (const kind of Object.values(kinds)) {
    const table = kind.model.tableName;
    const scope = Object.fromEntries(Object.entries(kind.scope ?? {}).map(([k, v]) => [`o.${k}`, v]));
    if (kind.machine.corrections) {
      const late = await db(`${kind.history.tableName} as h`)
        .join(`${table} as o`, 'o.id', `h.${kind.history.column}`)
        .where(scope)
        .where('h.reason', 'late-success')
        .where('h.at', '>=', since)
        .orderBy('h.at', 'desc')
        .limit(limit)
        .select(...COLUMNS, 'h.at as at');
      for (const r of late) found.push({ item: itemOf('late-success', kind.name, r), at: r.at });
    }
    for (const outcome of kind.neverSent
      ? (['never-sent', 'amount-mismatch'] as const)
      : (['amount-mismatch'] as const)) {
      const reports = await db('provider_callbacks as c')
        .join(`${table} as o`, 'o.id', 'c.object_id')
        .where(scope)
        .where({ 'c.outcome': outcome, 'c.object_kind': kind.name })
        .where('c.received_at', '>=', since)
        .orderBy('c.received_at', 'desc')
        .limit(limit)
        .select(...COLUMNS, 'c.received_at as at');
      for (const r of reports) found.push({ item: itemOf(outcome, kind.name, r), at: r.at });
    }
  }
  return found.sort((a, b) => b.at.getTime() - a.at.getTime()).map((f) => f.item);
}

/** What an operator should look at: operations open past their bound (oldest window first), then what providers contradicted (newest first). */
export async function attentionList(
  db: Executor,
  kinds: KindTable,
  now: number,
  limit = 500,
): Promise<AttentionItem[]> {
  const open = await openPastBound(db, kinds, now, limit);
  return [...open, ...(await contradictions(db, kinds, now, limit))].slice(0, limit);
}

/** Every operation open past its bound, oldest window first. */
export async function openPastBound(
  db: Executor,
  kinds: KindTable,
  now: number,
  limit = 500,
): Promise<AttentionItem[]> {
  const found: (AttentionItem & { ends: Date })[] = [];
  for (const kind of Object.values(kinds)) {
    const rows: OperationRow[] = await pastBound(db, kind, now)
      .orderBy('window_ends_at')
      .limit(limit)
      .select(...FIELDS);
    for (const r of rows) found.push({ ...itemOf('open-past-bound', kind.name, r), ends: r.window_ends_at });
  }
  return found
    .sort((a, b) => a.ends.getTime() - b.ends.getTime())
    .slice(0, limit)
    .map(({ ends: _ends, ...item }) => item);
}

/** How many operations of each kind are open past their bound (the /metrics gauge). */
export async function countPastBound(db: Executor, kinds: KindTable, now: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const kind of Object.values(kinds)) counts[kind.name] = await pastBound(db, kind, now).resultSize();
  return counts;
}
