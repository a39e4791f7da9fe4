import type { PayoutRow } from '../db/rows';

/** The payout object of docs/decisions.md#payouts (also the `data.object` of payout events). */
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
