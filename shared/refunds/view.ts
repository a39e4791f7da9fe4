import type { RefundRow } from '../db/rows';

/** The refund object (also the `data.object` of refund events), plus the failure fields. */
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
