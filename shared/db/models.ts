import { Model } from 'objection';

/**
 * Objection models: single-table access only. Multi-table writes live in one service function
 * per flow, inside one transaction; callers pass the knex or transaction to `Model.query(db)`,
 * so no model is bound to a global connection.
 */

import type { Currency, Environment } from '../domain/ledger';
import type { FeeRule } from '../domain/fees';

export type { Currency, Environment, FeeRule };
export type Scope = 'read' | 'payments' | 'full';

export class Merchant extends Model {
  static override tableName = 'merchants';
  static override jsonAttributes = ['fees'];
  id!: string;
  name!: string;
  status!: 'active' | 'suspended';
  fee_bearer!: 'merchant' | 'customer';
  fees!: Record<Currency, FeeRule>;
  per_tx_limit_usd!: number | null;
  per_tx_limit_cdf!: number | null;
  created_at!: Date;
  updated_at!: Date;
}

export class Credential extends Model {
  static override tableName = 'credentials';
  id!: string;
  merchant_id!: string;
  environment!: Environment;
  scope!: Scope;
  api_key_hash!: string;
  api_key_last4!: string;
  secret_ciphertext!: string;
  secret_key_id!: string;
  ip_allowlist!: string[] | null;
  replaces_id!: string | null;
  created_at!: Date;
  revoked_at!: Date | null;
  expires_at!: Date | null;
}

export class WebhookSecret extends Model {
  static override tableName = 'webhook_secrets';
  id!: string;
  merchant_id!: string;
  environment!: Environment;
  secret_ciphertext!: string;
  secret_key_id!: string;
  /** the replaced secret, signing beside the current one until previous_expires_at (rotation) */
  previous_secret_ciphertext!: string | null;
  previous_secret_key_id!: string | null;
  previous_expires_at!: Date | null;
  rotated_at!: Date | null;
  created_at!: Date;
}
