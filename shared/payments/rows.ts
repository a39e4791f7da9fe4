import type { FeeBearer } from '../domain/fees';
import type { PaymentStatus } from '../operations/machines';
import type { Currency, Environment, Operator } from '../vocabulary';
import type { MetadataValue } from './schemas';

/** A row of `payments` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface PaymentRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  status: PaymentStatus;
  method: 'mobile_money' | 'card';
  currency: Currency;
  amount: number;
  amount_charged: number;
  amount_net: number;
  fee: number;
  fee_bearer: FeeBearer;
  amount_refunded: number;
  reference: string;
  description: string | null;
  metadata: Record<string, MetadataValue>;
  operator: Operator | null;
  phone: string | null;
  customer_email: string | null;
  customer_name: string | null;
  return_url: string | null;
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

export const PAYMENTS = 'payments';
