import { Model, type ModelClass } from 'objection';

/**
 * An objection model per table, for its single-table reads and writes (multi-table flows: the
 * knex builder in one transaction; hot paths: shared/db/sql). Callers pass the knex or the
 * transaction to `Model.query(db)`: no model is bound to a global connection. Models hold columns
 * only; their json columns are listed in `jsonAttributes`. Columns are `declare`d: a class field
 * would give every instance its columns as undefined own properties (ES2022 class fields), which
 * a spread of a row would then copy. Rows defined in rows.ts give their model its fields by
 * declaration merging.
 */

import type { AccountKind, Currency, Environment } from '../rules/ledger';
import type { FeeRule } from '../rules/fees';
import type {
  EventRow,
  OutboxMessage,
  PaymentLinkRow,
  PaymentRow,
  PayoutRow,
  RefundRow,
  SettlementRow,
  WebhookRow,
} from './rows';
import type { InboxRow } from './sql/callbacks';
import type { Direction } from '../vocabulary';

export type { Currency, Environment, FeeRule };
export type Scope = 'read' | 'payments' | 'full';

/** Every model: `first()` asks Postgres for one row (objection's default fetches them all). */
class Row extends Model {
  static override useLimitInFirst = true;
}

export class Merchant extends Row {
  static override tableName = 'merchants';
  static override jsonAttributes = ['fees'];
  declare id: string;
  declare name: string;
  declare status: 'active' | 'suspended';
  declare fee_bearer: 'merchant' | 'customer';
  declare fees: Record<Currency, FeeRule>;
  declare per_tx_limit_usd: number | null;
  declare per_tx_limit_cdf: number | null;
  declare created_at: Date;
  declare updated_at: Date;
}

export class Credential extends Row {
  static override tableName = 'credentials';
  declare id: string;
  declare merchant_id: string;
  declare environment: Environment;
  declare scope: Scope;
  declare api_key_hash: string;
  declare api_key_last4: string;
  declare secret_ciphertext: string;
  declare secret_key_id: string;
  declare ip_allowlist: string[] | null;
  declare replaces_id: string | null;
  declare created_at: Date;
  declare revoked_at: Date | null;
  declare expires_at: Date | null;
}

export class WebhookSecret extends Row {
  static override tableName = 'webhook_secrets';
  declare id: string;
  declare merchant_id: string;
  declare environment: Environment;
  declare secret_ciphertext: string;
  declare secret_key_id: string;
  /** the replaced secret, signing beside the current one until previous_expires_at (rotation) */
  declare previous_secret_ciphertext: string | null;
  declare previous_secret_key_id: string | null;
  declare previous_expires_at: Date | null;
  declare rotated_at: Date | null;
  declare created_at: Date;
}

/** The row's own timestamps (not part of the object a resource shows). */
interface Timestamps {
  created_at: Date;
  updated_at: Date;
}

export class Payment extends Row {
  static override tableName = 'payments';
  static override jsonAttributes = ['metadata'];
}
export interface Payment extends PaymentRow, Timestamps {}

export class PaymentLink extends Row {
  static override tableName = 'payment_links';
  static override jsonAttributes = ['methods', 'metadata'];
}
export interface PaymentLink extends PaymentLinkRow, Timestamps {}

export class Refund extends Row {
  static override tableName = 'refunds';
}
export interface Refund extends RefundRow, Timestamps {}

export class Payout extends Row {
  static override tableName = 'payouts';
  static override jsonAttributes = ['metadata'];
}
export interface Payout extends PayoutRow, Timestamps {}

/** A row of a `*_status_changes` table (from, to, reason, at): history as data. */
export interface StatusChangeRow {
  id: number;
  from_status: string | null;
  to_status: string;
  reason: string;
  at: Date;
}

/** The model of an operation kind's status history: its table, and `column`, the column naming the operation. */
export type StatusHistory<C extends string = string> = ModelClass<Model & StatusChangeRow & Record<C, string>> & {
  readonly column: C;
};

function statusHistory<C extends string>(tableName: string, column: C): StatusHistory<C> {
  return class extends Row {
    static override tableName = tableName;
    static readonly column = column;
  } as unknown as StatusHistory<C>;
}

export const PaymentStatusChange = statusHistory('payment_status_changes', 'payment_id');
export const RefundStatusChange = statusHistory('refund_status_changes', 'refund_id');
export const PayoutStatusChange = statusHistory('payout_status_changes', 'payout_id');

/** The inbox of provider callbacks (shared/providers/inbox.ts). */
export class InboxCallback extends Row {
  static override tableName = 'provider_callbacks';
  declare received_at: Date;
  declare processed_at: Date | null;
  declare outcome: string | null;
}
export interface InboxCallback extends InboxRow {}

export class OutboxRow extends Row {
  static override tableName = 'outbox';
  static override jsonAttributes = ['payload'];
  declare created_at: Date;
  declare enqueued_at: Date | null;
}
export interface OutboxRow extends OutboxMessage {}

export class Event extends Row {
  static override tableName = 'events';
  // `body` is written as exact JSON text (shared/money.ts exactJson), so it is not listed here
  static override jsonAttributes: string[] = [];
  /** how many times the merchant asked for the event again (at most 10) */
  declare redeliveries: number;
}
export interface Event extends EventRow {}

export class Webhook extends Row {
  static override tableName = 'webhooks';
}
export interface Webhook extends WebhookRow {}

export class WebhookDelivery extends Row {
  static override tableName = 'webhook_deliveries';
  declare id: string;
  declare event_id: string;
  declare webhook_id: string;
  declare status: 'pending' | 'succeeded' | 'dead';
  declare round: number;
  declare attempts: number;
  declare next_attempt_at: Date;
  declare lease_until: Date | null;
  declare last_status_code: number | null;
  declare last_error: string | null;
  declare completed_at: Date | null;
  /** Unix seconds: the list cursor */
  declare created: number;
  /** 0: the event's own fan-out; n: the merchant's n-th redelivery */
  declare redelivery: number;
  declare created_at: Date;
  declare updated_at: Date;
}

export class WebhookAttempt extends Row {
  static override tableName = 'webhook_attempts';
  declare id: number;
  declare delivery_id: string;
  declare round: number;
  declare attempt: number;
  declare started_at: Date;
  declare finished_at: Date | null;
  declare status_code: number | null;
  declare latency_ms: number | null;
  declare error: string | null;
  declare response_excerpt: string | null;
}

/** A signed request accepted once (shared/requestSignatures.ts), kept while it could be replayed. */
export class RequestSignature extends Row {
  static override tableName = 'request_signatures';
  static override idColumn = ['merchant_id', 'environment', 'signature'];
  declare merchant_id: string;
  declare environment: Environment;
  declare signature: string;
  /** the Idempotency-Key (lower case) the signature was first accepted with, if any */
  declare idempotency_key: string | null;
  declare expires_at: Date;
}

/** An operator direction the service operator closed (shared/availability/closures.ts). */
export class OperatorClosure extends Row {
  static override tableName = 'operator_closures';
  static override idColumn = ['operator', 'direction'];
  declare operator: string;
  declare direction: Direction;
  declare closed_at: Date;
}

/** Provider call counts per operator, direction, environment and 10-second bucket (shared/operations/health.ts). */
export class ProviderHealthBucket extends Row {
  static override tableName = 'provider_health';
  static override idColumn = ['operator', 'direction', 'environment', 'bucket'];
  declare operator: string;
  declare direction: Direction;
  declare environment: Environment;
  declare bucket: Date;
  declare calls: number;
  declare failures: number;
  declare slow: number;
  declare latency_ms_sum: number;
}

export class IdempotencyKey extends Row {
  static override tableName = 'idempotency_keys';
  static override idColumn = ['merchant_id', 'environment', 'key'];
  static override jsonAttributes = ['response_headers'];
  declare merchant_id: string;
  declare environment: Environment;
  declare key: string;
  declare method: string;
  declare path: string;
  declare request_hash: string;
  declare status: 'in_progress' | 'completed';
  declare response_status: number | null;
  declare response_headers: Record<string, string> | null;
  declare response_body: Buffer | null;
  declare locked_until: Date | null;
  declare expires_at: Date;
  declare created_at: Date;
}

export class Setting extends Row {
  static override tableName = 'settings';
  static override idColumn = 'key';
  static override jsonAttributes = ['value'];
  declare key: string;
  declare value: Record<string, unknown>;
  declare updated_at: Date;
}

/** The columns of a ledger account, which its balance (the view) has too. */
interface AccountColumns {
  id: number;
  owner: string;
  environment: Environment;
  currency: Currency;
  kind: AccountKind;
  allow_negative: boolean;
}

export class LedgerAccount extends Row {
  static override tableName = 'ledger_accounts';
  /** cached balance of a guarded account (its folded entries); 0 on platform accounts */
  declare balance: number | bigint;
}
export interface LedgerAccount extends AccountColumns {}

export class LedgerTransaction extends Row {
  static override tableName = 'ledger_transactions';
  declare id: string;
  declare kind: string;
  declare reference_id: string;
  declare environment: Environment;
  declare currency: Currency;
  declare merchant_id: string | null;
  declare settlement_id: string | null;
  declare created_at: Date;
}

export class LedgerEntry extends Row {
  static override tableName = 'ledger_entries';
  declare id: number;
  declare transaction_id: string;
  declare account_id: number;
  declare amount: number;
  /** a credit not yet folded into its account's cached balance */
  declare unfolded: boolean;
  declare created_at: Date;
}

export class Settlement extends Row {
  static override tableName = 'settlements';
}
export interface Settlement extends SettlementRow {}
