import type { FeeBearer } from '../rules/fees';
import type { SettlementFigures } from '../rules/settlement';
import type { JobData, QueueName } from '../queues/names';
import type {
  Currency,
  Environment,
  EventType,
  MetadataValue,
  Operator,
  PaymentStatus,
  PayoutStatus,
  RefundStatus,
} from '../vocabulary';

/**
 * The rows of the service's tables as the data layer reads them (bigint columns arrive as
 * numbers, or exact bigints beyond 2^53: shared/db/knex.ts); the models take their fields from here.
 */

/** The columns every operation's row has. */
export interface OperationRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  status: string;
  currency: Currency;
  /** the mobile-money operator (null for a card payment) */
  operator: string | null;
  /** Unix seconds */
  created: number;
  provider: string | null;
  provider_ref: string | null;
  failure_code: string | null;
  failure_message: string | null;
  version: number;
  completed: number | null;
  /** when the provider accepted the request (null until then) */
  sent_at: Date | null;
  /** when the provider should have given its outcome; the sweep asks after that */
  window_ends_at: Date;
  /** last time the sweep asked the provider, and how many times it has */
  asked_at: Date | null;
  asks: number;
  /** the trace context it was created in (W3C traceparent; null with traces off): later work on it joins that trace */
  traceparent: string | null;
}

/** A row of `payments`. */
export interface PaymentRow extends OperationRow {
  status: PaymentStatus;
  method: 'mobile_money' | 'card';
  amount: number;
  amount_charged: number;
  amount_net: number;
  fee: number;
  fee_bearer: FeeBearer;
  amount_refunded: number;
  reference: string;
  description: string | null;
  metadata: Record<string, MetadataValue>;
  operator: Operator | null;
  phone: string | null;
  customer_email: string | null;
  customer_name: string | null;
  return_url: string | null;
  created: number;
  /** card payments: what the acquirer reported of the card (null until charged) */
  card: CardDetails | null;
  /** card payments: the vault token posted by the checkout, until the charge job has used it */
  checkout_token: string | null;
  /** card payments: the issuer's 3-D Secure page while the challenge is under way (kept after it) */
  challenge_url: string | null;
  /** card payments: why the last token was refused (token-invalid, token-expired, token-used, token-foreign) */
  checkout_error: string | null;
  /** the payment link it was made through (null: created through the API) */
  payment_link: string | null;
}

export interface CardDetails {
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
}

/** A row of `refunds`. */
export interface RefundRow extends OperationRow {
  payment_id: string;
  status: RefundStatus;
  amount: number;
  reason: string | null;
  /** the phone that paid a mobile-money payment; null for a card payment's refund (back to the card) */
  operator: string | null;
  phone: string | null;
  created: number;
}

/** A row of `payouts`. */
export interface PayoutRow extends OperationRow {
  status: PayoutStatus;
  amount: number;
  fee: number;
  method: 'mobile_money';
  operator: string;
  phone: string;
  reference: string;
  description: string | null;
  metadata: Record<string, unknown>;
  created: number;
}

/** A row of the outbox (shared/queues/outbox.ts): a job that follows from a change, written with it. */
export interface OutboxMessage {
  id: string;
  queue: QueueName;
  job_name: string;
  payload: JobData;
  delay_ms: number;
  /** the trace context of the span that wrote the row (W3C traceparent; null with traces off): its job continues that trace */
  traceparent: string | null;
}

/** Exactly the keys of a row type, as a list (a key missing from the list, or one too many, fails the type check). */
type ColumnsOf<R> = readonly (keyof R & string)[];
const columns =
  <R>() =>
  <const C extends ColumnsOf<R>>(list: C & ([Exclude<keyof R, C[number]>] extends [never] ? unknown : never)) =>
    list;

const OPERATION_COLUMNS = [
  'id',
  'merchant_id',
  'environment',
  'status',
  'currency',
  'provider',
  'provider_ref',
  'failure_code',
  'failure_message',
  'version',
  'completed',
  'sent_at',
  'window_ends_at',
  'asked_at',
  'asks',
  'traceparent',
] as const satisfies ColumnsOf<OperationRow>;

/** The columns of each operation's table that a row of its type holds (the writer's: shared/operations/writer.ts). */
export const PAYMENT_COLUMNS = columns<PaymentRow>()([
  ...OPERATION_COLUMNS,
  'method',
  'amount',
  'amount_charged',
  'amount_net',
  'fee',
  'fee_bearer',
  'amount_refunded',
  'reference',
  'description',
  'metadata',
  'operator',
  'phone',
  'customer_email',
  'customer_name',
  'return_url',
  'created',
  'card',
  'checkout_token',
  'challenge_url',
  'checkout_error',
  'payment_link',
]);
export const REFUND_COLUMNS = columns<RefundRow>()([
  ...OPERATION_COLUMNS,
  'payment_id',
  'amount',
  'reason',
  'operator',
  'phone',
  'created',
]);
export const PAYOUT_COLUMNS = columns<PayoutRow>()([
  ...OPERATION_COLUMNS,
  'amount',
  'fee',
  'method',
  'operator',
  'phone',
  'reference',
  'description',
  'metadata',
  'created',
]);

/** A row of `payment_links` (docs/decisions.md#payment-links). */
export interface PaymentLinkRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  currency: Currency;
  amount: number | null;
  min_amount: number | null;
  max_amount: number | null;
  description: string;
  methods: ('mobile_money' | 'card')[];
  single_use: boolean;
  /** Unix seconds; null: never expires */
  expires_at: number | null;
  return_url: string | null;
  metadata: Record<string, MetadataValue>;
  created: number;
  /** Unix seconds it was deactivated; null while not */
  deactivated: number | null;
  /** payments made through it so far: the n of the next one's reference */
  payments_made: number;
}

export interface EventBody {
  id: string;
  type: EventType;
  created: number;
  data: { object: Record<string, unknown>; object_version: number };
}

export interface EventRow {
  id: string;
  merchant_id: string;
  environment: 'test' | 'live';
  type: EventType;
  object_id: string;
  object_version: number;
  created: number;
  body: EventBody;
}

export interface WebhookRow {
  id: string;
  merchant_id: string;
  environment: Environment;
  url: string;
  events: string[];
  status: 'enabled' | 'disabled';
  version: number;
  consecutive_failures: number;
  breaker_opened_at: Date | null;
  breaker_open_until: Date | null;
  breaker_probe_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A row of `settlements`: its figures (gross, fees, refunds, payouts, net, count) as the domain sums them. */
export interface SettlementRow extends SettlementFigures {
  id: string;
  merchant_id: string;
  environment: Environment;
  currency: Currency;
  period_start: number;
  period_end: number;
  created: number;
  version: number;
}

/** A provider_callbacks row's normalised columns, as its connector parsed it (shared/providers/connector.ts): all the kernel reads of a callback. */
export interface CallbackColumns {
  id: string;
  provider: string;
  verified: boolean;
  provider_event_id: string | null;
  object_kind: string;
  object_id: string;
  reported_status: string;
  provider_ref: string | null;
  failure_code: string | null;
  failure_message: string | null;
  amount: number | string | null;
  currency: string | null;
}
