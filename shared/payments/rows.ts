import type { Executor, Trx } from '../db/knex';
import type { Currency, Environment } from '../domain/ledger';
import type { PaymentStatus } from '../domain/payment';
import type { FeeBearer } from '../domain/fees';
import type { Operator } from '../domain/msisdn';
import type { MetadataValue } from './schemas';

/** A row of `payments` (single-table access for the payment flows). */
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
  pushed_at: Date | null;
  window_ends_at: Date;
  checked_at: Date | null;
}

export const PAYMENTS = 'payments';

export async function findPayment(db: Executor, id: string): Promise<PaymentRow | undefined> {
  return db<PaymentRow>(PAYMENTS).where({ id }).first();
}

/** Reads a payment under SELECT ... FOR UPDATE: every status change happens behind this lock. */
export async function lockPayment(trx: Trx, id: string): Promise<PaymentRow | undefined> {
  return trx<PaymentRow>(PAYMENTS).where({ id }).forUpdate().first();
}
