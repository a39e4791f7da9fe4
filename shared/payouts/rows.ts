import type { PayoutStatus } from '../operations/machines';
import type { Currency, Environment } from '../vocabulary';

/** A row of `payouts` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface PayoutRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  status: PayoutStatus;
  amount: number;
  fee: number;
  currency: Currency;
  method: 'mobile_money';
  operator: string;
  phone: string;
  reference: string;
  description: string | null;
  metadata: Record<string, unknown>;
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

export const PAYOUTS = 'payouts';
