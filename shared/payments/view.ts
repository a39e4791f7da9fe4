import type { PaymentRow } from '../db/rows';

/** The fields the API object and the event object share, in their documented order. */
function common(p: PaymentRow) {
  return {
    id: p.id,
    object: 'payment' as const,
    status: p.status,
    method: p.method,
    environment: p.environment,
    currency: p.currency,
    amount_charged: p.amount_charged,
    amount_net: p.amount_net,
    fee: p.fee,
    fee_bearer: p.fee_bearer,
    amount_refunded: p.amount_refunded,
    reference: p.reference,
    payment_link: p.payment_link ?? null,
    provider: p.provider,
    provider_ref: p.provider_ref,
    failure_code: p.failure_code,
    failure_message: p.failure_message,
  };
}

/** The payment object of the API (with failure_code, failure_message, amount_refunded: docs/decisions.md#payments). */
export function paymentView(p: PaymentRow, baseUrl: string) {
  return {
    ...common(p),
    created: p.created,
    completed: p.completed,
    metadata: p.metadata,
    ...(p.method === 'card' ? { checkout_url: `${baseUrl}/checkout/${p.id}`, card: p.card ?? null } : {}),
  };
}

export type PaymentView = ReturnType<typeof paymentView>;

/**
 * The payment object inside an event (README.md#integrating): `customer` instead of the phone fields, and
 * `completed_at` where the API says `completed`.
 */
export function paymentEventObject(p: PaymentRow) {
  return {
    ...common(p),
    customer: { msisdn: p.phone, operator: p.operator, email: p.customer_email, name: p.customer_name },
    ...(p.method === 'card' ? { card: p.card ?? null } : {}),
    metadata: p.metadata,
    completed_at: p.completed,
  };
}
