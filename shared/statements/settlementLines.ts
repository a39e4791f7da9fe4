import type { Caller } from '../caller';
import type { Executor } from '../db/knex';
import { isId } from '../ids';
import { NotFound } from '../errors';
import { cursorOf, parseLimit, toPage } from '../db/pagination';
import { settlementLines, type StatementLine } from '../db/sql/statements';
import { Settlement } from '../db/models';

/**
 * GET /v1/settlements/{id}/transactions: the ledger lines a settlement batch covers, newest first,
 * paged like every list (cursor `<created>.<line id>`); 404 for another merchant's or environment's batch.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function lineView(l: StatementLine) {
  return {
    id: l.id,
    type: l.type,
    source_id: l.source_id,
    amount: l.amount,
    fee: l.fee,
    net: l.net,
    currency: l.currency,
    created: l.created,
  };
}

export async function listSettlementLines(
  db: Executor,
  viewer: Caller,
  settlementId: string,
  query: { limit?: string; cursor?: string },
) {
  const limit = parseLimit(query.limit);
  const cursor = cursorOf(query.cursor, (id) => UUID.test(id));
  if (!isId('settlement', settlementId)) throw new NotFound('Settlement');
  const batch = await Settlement.query(db)
    .findOne({ id: settlementId, merchant_id: viewer.merchantId, environment: viewer.environment })
    .select('id');
  if (!batch) throw new NotFound('Settlement');
  const rows = await settlementLines(db, settlementId, limit + 1, cursor);
  return toPage(rows, limit, lineView);
}
