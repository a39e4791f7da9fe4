/**
 * Payout rules (pure). Glossary:
 * - payout (B2C): money a merchant sends from its available balance to a mobile-money phone.
 *   amount + fee leave available when it is created (`pending`); the payout pool hands it to the
 *   provider (`processing`); the provider's callback confirms it (`succeeded`) or refuses it
 *   (`failed`, amount + fee go back to available).
 */

export type PayoutStatus = 'pending' | 'processing' | 'succeeded' | 'failed';
export const PAYOUT_STATUSES: PayoutStatus[] = ['pending', 'processing', 'succeeded', 'failed'];

/**
 * - sent: the provider accepted the payout request;
 * - provider_succeeded / provider_failed: the provider's outcome (a callback, or a refusal when
 *   the request is sent). An outcome may overtake `sent` (a fast callback), so it is allowed
 *   from `pending` too.
 */
export type PayoutTrigger = 'sent' | 'provider_succeeded' | 'provider_failed';
export const PAYOUT_TRIGGERS: PayoutTrigger[] = ['sent', 'provider_succeeded', 'provider_failed'];

const TRANSITIONS: Record<PayoutStatus, Partial<Record<PayoutTrigger, PayoutStatus>>> = {
  pending: { sent: 'processing', provider_succeeded: 'succeeded', provider_failed: 'failed' },
  processing: { provider_succeeded: 'succeeded', provider_failed: 'failed' },
  succeeded: {},
  failed: {},
};

/** The status a trigger leads to, or null when the move is not allowed (recorded and ignored). */
export function nextPayoutStatus(from: PayoutStatus, trigger: PayoutTrigger): PayoutStatus | null {
  return TRANSITIONS[from][trigger] ?? null;
}
