import type { Executor } from '../db/knex';
import { isId } from '../domain/ids';
import { notFound } from '../errors';
import type { Owner } from './create';
import { payoutView, type PayoutRow } from './view';

/** GET /v1/payouts/{id}: 404 for an unknown id or another merchant's or environment's payout. */
export async function getPayout(db: Executor, owner: Owner, id: string) {
  if (!isId('payout', id)) throw notFound('Payout');
  const row: PayoutRow | undefined = await db('payouts').where({ id, merchant_id: owner.merchantId, environment: owner.environment }).first();
  if (!row) throw notFound('Payout');
  return payoutView(row);
}
