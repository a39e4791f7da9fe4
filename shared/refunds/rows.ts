import type { OperationRow } from '../operations/kind';
import type { RefundStatus } from '../operations/machines';

/** A row of `refunds` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface RefundRow extends OperationRow {
  payment_id: string;
  status: RefundStatus;
  amount: number;
  reason: string | null;
  operator: string;
  phone: string;
  created: number;
}
