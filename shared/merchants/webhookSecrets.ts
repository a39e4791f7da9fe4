import { randomBytes } from 'node:crypto';
import type { SecretsKey } from '../config';
import { decryptSecret, encryptSecret } from '../crypto/secrets';
import type { Db, Executor } from '../db/knex';
import { Merchant, WebhookSecret, type Environment } from '../db/models';
import { newId, unixOf } from '../ids';
import { NotFound } from '../errors';

/**
 * A merchant's webhook secret per environment (docs/decisions.md#webhooks, "Integrator's kit"):
 * `whsec_` + standard base64 of 32 random bytes, so that the text after the prefix is the
 * Standard Webhooks key as that standard decodes it. Stored AES-256-GCM encrypted, like every
 * merchant secret. A rotation keeps the replaced secret signing beside the new one until its
 * overlap ends, so a merchant can switch its receivers at leisure.
 */

export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The merchant's webhook secret for one environment, created on first use; decrypted. */
export async function webhookSecretFor(
  trx: Executor,
  merchantId: string,
  env: Environment,
  keys: SecretsKey[],
): Promise<string> {
  const existing = await WebhookSecret.query(trx).findOne({ merchant_id: merchantId, environment: env });
  if (existing) return decryptSecret({ keyId: existing.secret_key_id, ciphertext: existing.secret_ciphertext }, keys);
  const plain = newWebhookSecret();
  const enc = encryptSecret(plain, keys);
  await WebhookSecret.query(trx)
    .insert({
      id: newId('webhookSecret'),
      merchant_id: merchantId,
      environment: env,
      secret_ciphertext: enc.ciphertext,
      secret_key_id: enc.keyId,
    })
    .onConflict(['merchant_id', 'environment'])
    .ignore();
  // lost a race with another issuer (the row is not ours): use the one that won
  const stored = await WebhookSecret.query(trx).findOne({ merchant_id: merchantId, environment: env });
  return stored!.secret_ciphertext === enc.ciphertext
    ? plain
    : decryptSecret({ keyId: stored!.secret_key_id, ciphertext: stored!.secret_ciphertext }, keys);
}

/**
 * Replaces the secret of a merchant and environment; the replaced one keeps signing deliveries
 * (second signature) for `overlapSeconds`. A rotation during an overlap ends the older secret at
 * once: at most two secrets sign. Returns the new secret (shown here only).
 */
export async function rotateWebhookSecret(
  db: Db,
  merchantId: string,
  env: Environment,
  overlapSeconds: number,
  keys: SecretsKey[],
) {
  return db.transaction(async (trx) => {
    const merchant = await Merchant.query(trx).findById(merchantId).select('id');
    if (!merchant) throw new NotFound('Merchant');
    // the row exists from here on (created if the merchant never had one), and is locked
    await webhookSecretFor(trx, merchantId, env, keys);
    const current = await WebhookSecret.query(trx).findOne({ merchant_id: merchantId, environment: env }).forUpdate();
    const plain = newWebhookSecret();
    const enc = encryptSecret(plain, keys);
    // Postgres's now() is the truth here: the sender compares previous_expires_at with it (shared/db/sql/webhookDeliveries.ts)
    const { rows } = await trx.raw('select now() as now');
    const now = new Date(rows[0].now);
    const previousExpires = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
    await WebhookSecret.query(trx)
      .findById(current!.id)
      .patch({
        secret_ciphertext: enc.ciphertext,
        secret_key_id: enc.keyId,
        previous_secret_ciphertext: previousExpires ? current!.secret_ciphertext : null,
        previous_secret_key_id: previousExpires ? current!.secret_key_id : null,
        previous_expires_at: previousExpires,
        rotated_at: now,
      });
    return {
      object: 'webhook_secret',
      merchant_id: merchantId,
      environment: env,
      webhook_secret: plain,
      rotated: unixOf(now),
      previous_expires_at: unixOf(previousExpires),
    };
  });
}

/**
 * The stored form of the secrets that sign a delivery, encrypted: the current one (null: none
 * stored yet), and the replaced one while its rotation overlap lasts (else null).
 */
export interface SigningSecretsRow {
  secret_ciphertext: string | null;
  secret_key_id: string | null;
  previous_ciphertext: string | null;
  previous_key_id: string | null;
}

/**
 * Decrypts signing secrets, remembering what it decrypted (keyed by ciphertext: a rotation is a
 * new ciphertext, so it never serves a replaced secret).
 */
export class SigningSecrets {
  private readonly plain = new Map<string, string>();
  constructor(
    private readonly keys: SecretsKey[],
    private readonly max = 10_000,
  ) {}

  private decrypt(ciphertext: string, keyId: string): string {
    let value = this.plain.get(ciphertext);
    if (value === undefined) {
      value = decryptSecret({ keyId, ciphertext }, this.keys);
      if (this.plain.size >= this.max) this.plain.clear();
      this.plain.set(ciphertext, value);
    }
    return value;
  }

  /** The current secret first; null when the merchant has none stored yet. */
  of(row: SigningSecretsRow): string[] | null {
    if (!row.secret_ciphertext || !row.secret_key_id) return null;
    const secrets = [this.decrypt(row.secret_ciphertext, row.secret_key_id)];
    if (row.previous_ciphertext && row.previous_key_id)
      secrets.push(this.decrypt(row.previous_ciphertext, row.previous_key_id));
    return secrets;
  }
}
