import type { Executor, Trx } from '../db/knex';
import type { PayoutRow } from './view';

export const PAYOUTS = 'payouts';

export async function findPayout(db: Executor, id: string): Promise<PayoutRow | undefined> {
  return db<PayoutRow>(PAYOUTS).where({ id }).first();
}

/** Reads a payout under SELECT ... FOR UPDATE: every status change happens behind this lock. */
export async function lockPayout(trx: Trx, id: string): Promise<PayoutRow | undefined> {
  return trx<PayoutRow>(PAYOUTS).where({ id }).forUpdate().first();
}
