import type { Environment, Currency } from '../domain/ledger';
import type { Operator } from '../domain/msisdn';

/**
 * How every provider is driven (architecture: providers). Each call carries our own object id as
 * the provider's idempotency key, so a call repeated after a crash or a timeout never charges or
 * pays a client twice.
 */

/** What a provider moves money for; callbacks and answers to an ask name it, with our id. */
export type ProviderObjectKind = 'payment' | 'refund' | 'payout' | 'card_payment';
export const PROVIDER_OBJECT_KINDS: ProviderObjectKind[] = ['payment', 'refund', 'payout', 'card_payment'];

export interface PushRequest {
  paymentId: string;
  amount: number;
  currency: Currency;
  msisdn: string;
  description?: string | null;
}

export interface RefundRequest {
  refundId: string;
  /** the payment refunded, and the provider's reference of it when known */
  paymentId: string;
  paymentProviderRef: string | null;
  amount: number;
  currency: Currency;
  msisdn: string;
}

export interface PayoutRequest {
  payoutId: string;
  amount: number;
  currency: Currency;
  msisdn: string;
  description?: string | null;
}

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

/** A verified callback, parsed. */
export interface ProviderCallback {
  /** the provider's id of this notification (the same notification sent twice keeps it) */
  eventId: string;
  kind: ProviderObjectKind;
  /** our id: pay_, re_ or po_ */
  objectId: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  providerRef: string | null;
  failureCode: string | null;
  failureMessage: string | null;
}

/** A callback as the inbox keeps it, with its inbox row id and the provider that sent it. */
export interface StoredCallback extends ProviderCallback {
  id: string;
  provider: string;
}

/** What every provider does, whatever it moves money for: asks about an operation and verifies its callbacks. */
export interface ProviderBase {
  /** Our name of this provider: the `provider` field of a payment and the {provider} of /callbacks/{provider}. */
  readonly id: string;
  readonly environment: Environment;
  /** What the provider knows of one of our open operations (the sweep, at the window's end). */
  ask(kind: ProviderObjectKind, objectId: string): Promise<ProviderStatus>;
  /** True when the callback's signature is this provider's and fresh (anti-replay window). */
  verifyCallback(raw: Buffer, headers: Record<string, string | string[] | undefined>, nowUnix: number): boolean;
}

/** A mobile-money provider (one operator in one environment). */
export interface Provider extends ProviderBase {
  readonly operator: Operator;
  push(req: PushRequest): Promise<ProviderAccepted>;
  refund(req: RefundRequest): Promise<ProviderAccepted>;
  payout(req: PayoutRequest): Promise<ProviderAccepted>;
}
