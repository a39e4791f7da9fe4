import type { SecretsKey } from '../config';
import { decryptSecret } from '../crypto/secrets';
import type { Executor } from '../db/knex';
import type { Environment, Scope } from '../db/models';

/** What the merchant pipeline needs to know about the caller, found by the hash of its API key. */
export interface CredentialForAuth {
  credentialId: string;
  merchantId: string;
  environment: Environment;
  scope: Scope;
  ipAllowlist: string[] | null;
  merchantStatus: 'active' | 'suspended';
  /** Decrypted signing secret (sk_); lives in process memory only, never logged. */
  secret: string;
  /** null: valid; else the key stops working at this instant (ms since epoch; revocation grace). */
  expiresAtMs: number | null;
}

/**
 * One indexed query (credentials.api_key_hash is unique) joined with the merchant's status.
 * Returns revoked credentials too: whether one still works depends on the clock, which the
 * caller checks on every request, even when it caches this result.
 */
export async function findCredentialForAuth(
  db: Executor,
  apiKeyHash: string,
  keys: SecretsKey[],
): Promise<CredentialForAuth | null> {
  const row = await db('credentials as c')
    .join('merchants as m', 'm.id', 'c.merchant_id')
    .where('c.api_key_hash', apiKeyHash)
    .first(
      'c.id',
      'c.merchant_id',
      'c.environment',
      'c.scope',
      'c.ip_allowlist',
      'c.secret_ciphertext',
      'c.secret_key_id',
      'c.expires_at',
      'm.status as merchant_status',
    );
  if (!row) return null;
  return {
    credentialId: row.id,
    merchantId: row.merchant_id,
    environment: row.environment,
    scope: row.scope,
    ipAllowlist: row.ip_allowlist && row.ip_allowlist.length ? row.ip_allowlist : null,
    merchantStatus: row.merchant_status,
    secret: decryptSecret({ keyId: row.secret_key_id, ciphertext: row.secret_ciphertext }, keys),
    expiresAtMs: row.expires_at ? new Date(row.expires_at).getTime() : null,
  };
}

/** A credential works while it has no end, or until its end (a revoked key in its grace). */
export function credentialUsable(c: Pick<CredentialForAuth, 'expiresAtMs'>, nowMs: number): boolean {
  return c.expiresAtMs === null || nowMs < c.expiresAtMs;
}
