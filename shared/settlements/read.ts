import type { Executor } from '../db/knex';
import { isId } from '../ids';
import { NotFound } from '../errors';
import { CURSOR_QUERY, LIMIT_QUERY, pageQuery, parseCursor, parseLimit, toPage } from '../db/pagination';
import type { Caller } from '../caller';
import { Settlement } from '../db/models';
import { settlementView } from './view';
import type { SettlementRow } from '../db/rows';

/** Read side of settlements: a merchant only ever sees its own batches of its key's environment. */

export type ListSettlementsQuery = { limit?: string; cursor?: string };

/** Query strings arrive as text: limit and cursor are checked for range by the pagination helpers. */
export const listSettlementsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: LIMIT_QUERY, cursor: CURSOR_QUERY },
} as const;

export async function getSettlement(db: Executor, viewer: Caller, id: string) {
  if (!isId('settlement', id)) throw new NotFound('Settlement');
  const row = await Settlement.query(db).findOne({
    id,
    merchant_id: viewer.merchantId,
    environment: viewer.environment,
  });
  if (!row) throw new NotFound('Settlement');
  return settlementView(row);
}

/** GET /v1/settlements: newest first, cursor pagination like payments. */
export async function listSettlements(db: Executor, viewer: Caller, query: ListSettlementsQuery) {
  const limit = parseLimit(query.limit);
  const cursor = parseCursor(query.cursor, 'stl_');
  const q = Settlement.query(db).where({ merchant_id: viewer.merchantId, environment: viewer.environment });
  const rows: SettlementRow[] = await pageQuery(q, cursor, limit);
  return toPage(rows, limit, settlementView);
}
