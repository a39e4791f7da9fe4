import { isIP } from 'node:net';
import type { SecretsKey } from '../config';
import { encryptSecret, hashApiKey, randomToken } from '../crypto/secrets';
import type { Db, Executor } from '../db/knex';
import { Credential, Merchant, type Currency, type Environment, type FeeRule, type Scope } from '../db/models';
import { newId, unixOf } from '../ids';
import { Conflict, NotFound, ValidationFailed } from '../errors';
import { webhookSecretFor } from './webhookSecrets';
import { CURRENCIES } from '../vocabulary';

/** Operator-side management of merchants and their credentials (docs/decisions.md#operator-admin-api). */

export const REVOCATION_GRACE_MS = 7 * 24 * 3600 * 1000;
const NO_FEE: FeeRule = { percent_bps: 0, fixed: 0 };
/**
 * Per-transaction limits of a merchant created without them (docs/decisions.md#http-frame-and-operator-api),
 * in minor units: USD 1,000,000 (10,000.00 USD) and CDF 2,500,000,000. An explicit null still
 * means no limit of the merchant's own (every amount stays at most 10^12).
 */
export const DEFAULT_PER_TX_LIMITS = { usd: 1_000_000, cdf: 2_500_000_000 } as const;

export type MerchantInput = Partial<
  Pick<Merchant, 'name' | 'fee_bearer' | 'per_tx_limit_usd' | 'per_tx_limit_cdf' | 'status'>
> & {
  fees?: Partial<Record<Currency, FeeRule>>;
};

export function merchantView(m: Merchant) {
  return {
    id: m.id,
    object: 'merchant',
    name: m.name,
    status: m.status,
    fee_bearer: m.fee_bearer,
    fees: m.fees,
    per_tx_limit_usd: m.per_tx_limit_usd,
    per_tx_limit_cdf: m.per_tx_limit_cdf,
    created: unixOf(m.created_at),
    updated: unixOf(m.updated_at),
  };
}

export function credentialView(c: Credential) {
  return {
    id: c.id,
    object: 'credential',
    merchant_id: c.merchant_id,
    environment: c.environment,
    scope: c.scope,
    ip_allowlist: c.ip_allowlist,
    api_key_last4: c.api_key_last4,
    created: unixOf(c.created_at),
    revoked_at: unixOf(c.revoked_at),
    expires_at: unixOf(c.expires_at),
  };
}

export async function createMerchant(db: Executor, input: MerchantInput & { name: string }) {
  const fees = Object.fromEntries(CURRENCIES.map((c) => [c, input.fees?.[c] ?? NO_FEE]));
  const m = await Merchant.query(db).insertAndFetch({
    id: newId('merchant'),
    name: input.name,
    status: input.status ?? 'active',
    fee_bearer: input.fee_bearer ?? 'merchant',
    fees: fees as Record<Currency, FeeRule>,
    per_tx_limit_usd: input.per_tx_limit_usd === undefined ? DEFAULT_PER_TX_LIMITS.usd : input.per_tx_limit_usd,
    per_tx_limit_cdf: input.per_tx_limit_cdf === undefined ? DEFAULT_PER_TX_LIMITS.cdf : input.per_tx_limit_cdf,
  });
  return merchantView(m);
}

export async function updateMerchant(db: Db, id: string, input: MerchantInput, now: number) {
  return db.transaction(async (trx) => {
    const m = await Merchant.query(trx).findById(id).forUpdate();
    if (!m) throw new NotFound('Merchant');
    const patch: Record<string, unknown> = { updated_at: new Date(now) };
    for (const k of ['name', 'status', 'fee_bearer', 'fees', 'per_tx_limit_usd', 'per_tx_limit_cdf'] as const) {
      if (input[k] !== undefined) patch[k] = input[k];
    }
    // fees name only the currencies they change
    if (input.fees !== undefined) patch.fees = { ...m.fees, ...input.fees };
    return merchantView(await m.$query(trx).patchAndFetch(patch));
  });
}

export async function getMerchant(db: Executor, id: string) {
  const m = await Merchant.query(db).findById(id);
  if (!m) throw new NotFound('Merchant');
  return merchantView(m);
}

export function validateAllowlist(list: string[] | undefined | null): string[] | null {
  if (!list || list.length === 0) return null;
  list.forEach((ip, i) => {
    if (isIP(ip) === 0)
      throw new ValidationFailed(`ip_allowlist.${i}`, `ip_allowlist.${i} must be an IPv4 or IPv6 address`);
  });
  return [...new Set(list)];
}

type NewCredential = Pick<Credential, 'merchant_id' | 'environment' | 'scope' | 'ip_allowlist'> & {
  replaces_id?: string;
};

async function insertCredential(trx: Executor, input: NewCredential, keys: SecretsKey[]) {
  const apiKey = `svc_${input.environment}_${randomToken(32)}`;
  const secret = `sk_${randomToken(32)}`;
  const enc = encryptSecret(secret, keys);
  const c = await Credential.query(trx).insertAndFetch({
    id: newId('credential'),
    merchant_id: input.merchant_id,
    environment: input.environment,
    scope: input.scope,
    api_key_hash: hashApiKey(apiKey),
    api_key_last4: apiKey.slice(-4),
    secret_ciphertext: enc.ciphertext,
    secret_key_id: enc.keyId,
    ip_allowlist: input.ip_allowlist,
    replaces_id: input.replaces_id ?? null,
  });
  const webhookSecret = await webhookSecretFor(trx, input.merchant_id, input.environment, keys);
  return { ...credentialView(c), api_key: apiKey, secret, webhook_secret: webhookSecret };
}

/** Issues a credential; the key, secret and webhook secret are returned once and never again. */
export async function issueCredential(
  db: Db,
  merchantId: string,
  input: { environment: Environment; scope: Scope; ip_allowlist?: string[] | null },
  keys: SecretsKey[],
) {
  const ipAllowlist = validateAllowlist(input.ip_allowlist);
  return db.transaction(async (trx) => {
    const m = await Merchant.query(trx).findById(merchantId);
    if (!m) throw new NotFound('Merchant');
    // A suspended merchant still gets its credential; the merchant pipeline refuses its requests.
    return insertCredential(
      trx,
      { merchant_id: merchantId, environment: input.environment, scope: input.scope, ip_allowlist: ipAllowlist },
      keys,
    );
  });
}

/**
 * Revokes a credential and issues its replacement (same scope and allowlist). The old key keeps
 * working for 7 days, or stops at once with `immediate`. Revoking a key still in its grace
 * period with `immediate` ends the grace; any other repeat is a 409.
 */
export async function revokeCredential(db: Db, id: string, immediate: boolean, keys: SecretsKey[], nowMs: number) {
  return db.transaction(async (trx) => {
    const c = await Credential.query(trx).findById(id).forUpdate();
    if (!c) throw new NotFound('Credential');
    // the clock the credential check reads (api/pipeline/bearer.ts) decides the grace
    const now = new Date(nowMs);
    if (c.revoked_at) {
      if (!immediate || (c.expires_at && c.expires_at <= now)) {
        throw new Conflict('credential-revoked', 'This credential is already revoked');
      }
      const revoked = await c.$query(trx).patchAndFetch({ expires_at: now });
      return { revoked: credentialView(revoked), replacement: null };
    }
    const expires = immediate ? now : new Date(now.getTime() + REVOCATION_GRACE_MS);
    const revoked = await c.$query(trx).patchAndFetch({ revoked_at: now, expires_at: expires });
    // same merchant, environment, scope and allowlist
    const replacement = await insertCredential(trx, { ...c, replaces_id: c.id }, keys);
    return { revoked: credentialView(revoked), replacement };
  });
}
