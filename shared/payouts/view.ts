import type { Currency, Environment } from '../domain/ledger';
import type { PayoutStatus } from '../domain/payout';

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
}

/** The payout object of decisions.md (also the `data.object` of payout events). */
export function payoutView(p: PayoutRow) {
  return {
    id: p.id,
    object: 'payout' as const,
    status: p.status,
    amount: p.amount,
    fee: p.fee,
    currency: p.currency,
    method: p.method,
    operator: p.operator,
    phone: p.phone,
    reference: p.reference,
    description: p.description,
    environment: p.environment,
    failure_code: p.failure_code,
    failure_message: p.failure_message,
    created: p.created,
    completed: p.completed,
    metadata: p.metadata,
  };
}

export type PayoutObject = ReturnType<typeof payoutView>;
