import type { Currency } from '../vocabulary';

/**
 * How every provider is driven (architecture: providers). Each call carries our own object id as
 * the provider's idempotency key, so a call repeated after a crash or a timeout never charges or
 * pays a client twice.
 */

/** What a provider moves money for; callbacks and answers to an ask name it, with our id. */
export type ProviderObjectKind = 'payment' | 'refund' | 'payout' | 'card_payment';
export const PROVIDER_OBJECT_KINDS: ProviderObjectKind[] = ['payment', 'refund', 'payout', 'card_payment'];

/** The provider took the request; the outcome comes later, by callback. */
export interface ProviderAccepted {
  providerRef: string;
}

/** What the provider knows of one of our objects (what the sweep asks: shared/operations/sweep.ts). */
export type ProviderStatus =
  | { state: 'pending'; providerRef: string | null }
  | { state: 'not_found' }
  /** the provider gave up waiting (the client never answered): no money moved */
  | { state: 'expired'; providerRef: string | null }
  | { state: 'succeeded'; providerRef: string | null }
  | { state: 'failed' | 'cancelled'; providerRef: string | null; failureCode: string; failureMessage: string };

/** What a status answer may echo of the amount that moved (compared with the operation's before it is applied). */
export interface EchoedAmount {
  /** minor units */
  amount?: number | null;
  currency?: Currency | null;
}
