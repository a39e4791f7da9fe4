import type { Caller } from '../domain/caller';
import type { Executor } from '../db/knex';
import { isId } from '../domain/ids';
import { NotFound, ValidationFailed } from '../errors';
import { parseLimit, toPage, type Cursor } from '../db/pagination';
import { settlementLines, type StatementLine } from '../db/sql/statements';
import { Settlement } from '../db/models';

/**
 * GET /v1/settlements/{id}/transactions: the ledger lines a settlement batch covers, newest
 * first, in pages (`limit` 1..100, default 20; `next_cursor` is `<created>.<line id>` like every
 * list). 404 for another merchant's or environment's batch.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function parseLineCursor(raw: string | undefined): Cursor | null {
  if (raw === undefined) return null;
  const m = /^(\d{1,12})(?:\.(.+))?$/.exec(raw);
  if (!m || (m[2] !== undefined && !UUID.test(m[2]))) throw new ValidationFailed('cursor', 'cursor must be the next_cursor of a previous page');
  return { created: Number(m[1]), id: m[2] ?? null };
}

export function lineView(l: StatementLine) {
  return { id: l.id, type: l.type, source_id: l.source_id, amount: l.amount, fee: l.fee, net: l.net, currency: l.currency, created: l.created };
}

export async function listSettlementLines(db: Executor, viewer: Caller, settlementId: string, query: { limit?: string; cursor?: string }) {
  const limit = parseLimit(query.limit);
  const cursor = parseLineCursor(query.cursor);
  if (!isId('settlement', settlementId)) throw new NotFound('Settlement');
  const batch = await Settlement.query(db).findOne({ id: settlementId, merchant_id: viewer.merchantId, environment: viewer.environment }).select('id');
  if (!batch) throw new NotFound('Settlement');
  const rows = await settlementLines(db, settlementId, limit + 1, cursor);
  return toPage(rows, limit, lineView);
}
