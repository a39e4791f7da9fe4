import type { RefundStatus } from '../operations/machines';
import type { Currency, Environment } from '../vocabulary';

/** A row of `refunds` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface RefundRow {
  id: string;
  payment_id: string;
  merchant_id: string;
  environment: Environment;
  status: RefundStatus;
  amount: number;
  currency: Currency;
  reason: string | null;
  operator: string;
  phone: string;
  provider: string | null;
  provider_ref: string | null;
  failure_code: string | null;
  failure_message: string | null;
  version: number;
  created: number;
  completed: number | null;
  sent_at: Date | null;
  window_ends_at: Date;
  checked_at: Date | null;
}

export const REFUNDS = 'refunds';
