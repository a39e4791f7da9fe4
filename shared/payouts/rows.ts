import type { OperationRow } from '../operations/kind';
import type { PayoutStatus } from '../operations/machines';

/** A row of `payouts` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface PayoutRow extends OperationRow {
  status: PayoutStatus;
  amount: number;
  fee: number;
  method: 'mobile_money';
  operator: string;
  phone: string;
  reference: string;
  description: string | null;
  metadata: Record<string, unknown>;
  created: number;
}
