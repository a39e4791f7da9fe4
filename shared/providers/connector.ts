import type { Currency, Direction, Environment, Operator } from '../vocabulary';
import type { EchoedAmount, ProviderAccepted, ProviderObjectKind, ProviderStatus } from './types';
import type { ConnectorName } from './table';

/**
 * A connector: everything about one provider's API (architecture: "Providers: connectors as
 * table entries"). The kernel (shared/operations) knows a provider only through this interface:
 * it never sees a URL, a header, a wire status or a raw body. A connector maps our requests onto
 * its API, its answers and callbacks onto our normalised form, and its failures onto
 * ProviderErrors (./errors.ts) that say whether another attempt may succeed.
 *
 * Our ids are the provider's idempotency keys: a request repeated after a crash or a timeout
 * reuses the same id (or asks first, where the API refuses a repeated id), so a client is never
 * charged or paid twice. An unknown outcome (timeout, 5xx, an unparsable answer) is never a
 * failure: the connector throws a retryable ProviderError and the kernel asks again later.
 */

/** What a connector can carry for one operator, currency and direction. Amounts in minor units. */
export interface AmountRule {
  /** decimals the provider takes in this currency (0: whole units only; at most the currency's exponent) */
  decimals: number;
  /** the provider's smallest and largest amount, in minor units; null when it sets none */
  min: number | null;
  max: number | null;
}

export interface Capabilities {
  /** the operators this connector reaches (an aggregator reaches several with one account) */
  readonly operators: readonly Operator[];
  /** the directions it serves (collection, refund, payout) */
  readonly directions: readonly Direction[];
  /** whether a refund may be for less than the payment (Airtel refunds only in full) */
  readonly partialRefunds: boolean;
  /** the amount rule of an operator, currency and direction; undefined: it cannot carry that currency at all */
  amountRule(operator: Operator, currency: Currency, direction: Direction): AmountRule | undefined;
}

interface Transfer {
  operator: Operator;
  /** minor units */
  amount: number;
  currency: Currency;
  /** ours: 243 + 9 digits */
  msisdn: string;
  description: string | null;
}

export interface PushRequest extends Transfer {
  /** pay_<uuid> */
  paymentId: string;
}

export interface PayoutRequest extends Transfer {
  /** po_<uuid> */
  payoutId: string;
}

export interface RefundRequest extends Transfer {
  /** re_<uuid> */
  refundId: string;
  /** the payment refunded, its provider's reference, and what it charged */
  paymentId: string;
  paymentProviderRef: string | null;
  paymentAmount: number;
}

/** What the kernel knows of an operation when it asks the provider about it. */
export interface OperationRef {
  kind: ProviderObjectKind;
  /** our id: pay_, re_ or po_ */
  id: string;
  providerRef: string | null;
  operator: Operator | null;
  currency: Currency;
  /** when the operation was created (ms): some APIs ask by date */
  created: number;
  /** a refund's payment (pay_): a gateway finds a refund under its payment's order; null for other kinds */
  paymentId?: string | null;
  /** a card payment: what its kind knows of the checkout's last attempt (a gateway continues it by its ids) */
  card?: {
    /** the n-th payment source posted */
    attempt: number;
    /** that attempt's payment source (a gateway session id), while the payment is open */
    session: string | null;
    /** minor units */
    amount: number;
    /** every window for the client's 3-D Secure challenge has passed */
    abandoned: boolean;
  };
}

/** A callback as it arrived, for verification. */
export interface CallbackRequest {
  raw: Buffer;
  /** lower-case header names, as node gives them */
  headers: Record<string, string | string[] | undefined>;
  /** the client address (after the trusted proxies) */
  ip: string;
  /** the service clock (shared/clock.ts), Unix seconds: the one clock of freshness checks */
  nowUnix: number;
}

/**
 * What verification says:
 * - `verified`: signed by the provider (and fresh, where its scheme carries a time);
 * - `unsigned`: the account sends no signature (configured so); never applied on its word: the
 *   kernel asks the provider's status endpoint and applies the answer;
 * - `invalid`: forged, altered, stale or unsigned where a signature is required: 401, nothing stored.
 */
export type Verification = 'verified' | 'unsigned' | 'invalid';

/** A callback in our normalised form: what the inbox stores, and all the kernel ever reads of it. */
export interface NormalisedCallback {
  /** the provider's id of this notification when it has one, else a digest of the body (a repeat keeps it) */
  eventId: string;
  kind: ProviderObjectKind;
  /** our id: pay_, re_ or po_ */
  objectId: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  providerRef: string | null;
  /** our vocabulary's failure code (the connector maps the provider's) */
  failureCode: string | null;
  failureMessage: string | null;
  /** the amount the provider says moved, in minor units, and its currency; null when the callback carries none */
  amount: number | null;
  currency: Currency | null;
}

/** A callback as the inbox keeps it (normalised by its connector), with its inbox row id and the provider that sent it. */
export interface StoredCallback extends NormalisedCallback {
  id: string;
  provider: string;
  /** false: the provider's account sends unsigned callbacks; the kernel confirms by a status query before applying */
  verified: boolean;
}

export interface CallbackAnswer {
  status: number;
  /** JSON body; undefined: empty */
  body?: unknown;
}

/** The provider's own word on an operator's directions (pawaPay's availability), merged into /v1/availability. */
export type ProviderAvailability = Partial<
  Record<Operator, Partial<Record<Direction, 'operational' | 'delayed' | 'closed'>>>
>;

/**
 * What every provider the service hears from does, whatever it moves money for (a mobile-money
 * connector, a card connector: ./cardConnector.ts): it is asked about an operation, and verifies
 * and parses its callbacks.
 */
export interface ProviderEndpoint {
  /** Our name of it: a payment's `provider`, and the {provider} of /callbacks/{provider}. */
  readonly id: string;
  /** Its entry in the connector table (shared/providers/table.ts): its metrics label. */
  readonly connector: ConnectorName;
  readonly environment: Environment;
  /** What the provider knows of one of our operations (by our id, or its reference where its API needs one). */
  ask(op: OperationRef): Promise<ProviderStatus & EchoedAmount>;
  verifyCallback(req: CallbackRequest): Promise<Verification>;
  /** The callback in our form, or `ignore` for a notification that decides nothing; throws CallbackFormatError. */
  parseCallback(raw: Buffer, headers: CallbackRequest['headers']): NormalisedCallback | 'ignore';
  /** The answer the provider expects once a callback is stored (or ignored). */
  callbackAnswer(): CallbackAnswer;
}

/** A mobile-money connector: one provider's API, serving one or more operators. */
export interface Connector extends ProviderEndpoint {
  readonly capabilities: Capabilities;
  push(req: PushRequest): Promise<ProviderAccepted>;
  refund(req: RefundRequest): Promise<ProviderAccepted>;
  payout(req: PayoutRequest): Promise<ProviderAccepted>;
  /** The provider's own availability, when its API tells it (cached by the connector; never slow). */
  availability?(): Promise<ProviderAvailability>;
  /** Stops timers and refreshes (the process is closing). */
  close?(): void;
}
