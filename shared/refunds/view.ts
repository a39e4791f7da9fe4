import type { Currency, Environment } from '../domain/ledger';
import type { RefundStatus } from '../domain/refund';

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
  /** when the provider accepted the refund request (null until then) */
  sent_at?: Date | null;
}

/** The refund object of spec 2.3 (also the `data.object` of refund events), plus the failure fields. */
export function refundView(r: RefundRow) {
  return {
    id: r.id,
    object: 'refund' as const,
    transaction_id: r.payment_id,
    amount: r.amount,
    currency: r.currency,
    reason: r.reason,
    status: r.status,
    failure_code: r.failure_code,
    failure_message: r.failure_message,
    created: r.created,
    completed: r.completed,
  };
}

export type RefundObject = ReturnType<typeof refundView>;
