import type { PaymentLinkRow } from '../db/rows';

/** A link's row as read for its object: `used_up` is whether a payment through it has succeeded (a single-use link's end). */
export type PaymentLinkRead = PaymentLinkRow & { used_up: boolean };

/** Why a link takes no payment now, or null while it does. */
export function inactiveReason(l: PaymentLinkRead, nowMs: number): 'deactivated' | 'expired' | 'used_up' | null {
  if (l.deactivated !== null) return 'deactivated';
  if (l.expires_at !== null && l.expires_at * 1000 <= nowMs) return 'expired';
  if (l.single_use && l.used_up) return 'used_up';
  return null;
}

/** The payment_link object of the API (docs/decisions.md#payment-links). */
export function paymentLinkView(l: PaymentLinkRead, baseUrl: string, nowMs: number) {
  return {
    id: l.id,
    object: 'payment_link' as const,
    url: `${baseUrl}/pay/${l.id}`,
    active: inactiveReason(l, nowMs) === null,
    environment: l.environment,
    currency: l.currency,
    amount: l.amount,
    min_amount: l.min_amount,
    max_amount: l.max_amount,
    description: l.description,
    methods: l.methods,
    single_use: l.single_use,
    expires_at: l.expires_at,
    return_url: l.return_url,
    metadata: l.metadata,
    created: l.created,
    deactivated: l.deactivated,
  };
}

export type PaymentLinkView = ReturnType<typeof paymentLinkView>;
