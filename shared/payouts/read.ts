import type { Executor } from '../db/knex';
import { isId } from '../ids';
import { NotFound } from '../errors';
import { pageQuery, parseCursor, parseLimit, toPage } from '../db/pagination';
import type { Caller } from '../caller';
import { Payout } from '../db/models';
import type { ListPayoutsQuery } from './schemas';
import { payoutView } from './view';
import type { PayoutRow } from '../db/rows';

/** Read side of payouts: a merchant only ever sees its own payouts of its key's environment. */

export async function getPayout(db: Executor, viewer: Caller, id: string) {
  if (!isId('payout', id)) throw new NotFound('Payout');
  const row = await Payout.query(db).findOne({ id, merchant_id: viewer.merchantId, environment: viewer.environment });
  if (!row) throw new NotFound('Payout');
  return payoutView(row);
}

/** GET /v1/payouts: newest first, cursor pagination like payments, filters reference and status. */
export async function listPayouts(db: Executor, viewer: Caller, query: ListPayoutsQuery) {
  const limit = parseLimit(query.limit);
  const cursor = parseCursor(query.cursor, 'po_');
  const q = Payout.query(db).where({ merchant_id: viewer.merchantId, environment: viewer.environment });
  if (query.reference !== undefined) q.where({ reference: query.reference });
  if (query.status !== undefined) q.where({ status: query.status });
  const rows: PayoutRow[] = await pageQuery(q, cursor, limit);
  return toPage(rows, limit, payoutView);
}
