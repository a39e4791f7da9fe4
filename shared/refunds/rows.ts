import type { Executor, Trx } from '../db/knex';
import type { RefundRow } from './view';

export const REFUNDS = 'refunds';

export async function findRefund(db: Executor, id: string): Promise<RefundRow | undefined> {
  return db<RefundRow>(REFUNDS).where({ id }).first();
}

/** Reads a refund under SELECT ... FOR UPDATE: every status change happens behind this lock. */
export async function lockRefund(trx: Trx, id: string): Promise<RefundRow | undefined> {
  return trx<RefundRow>(REFUNDS).where({ id }).forUpdate().first();
}
