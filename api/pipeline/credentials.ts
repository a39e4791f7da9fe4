import type { SecretsKey } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import { findCredentialForAuth, type CredentialForAuth } from '../../shared/merchants/auth';
import type { Clock } from '../../shared/clock';
import { TtlCache } from '../../shared/ttlCache';

/**
 * Credentials by API key hash, kept in this process for `ttlMs` (CREDENTIAL_CACHE_MS, default
 * 5 s): revocation and merchant suspension reach every web process within that time. Unknown
 * hashes are remembered too (a client retrying a bad key costs one query per TTL). The
 * decrypted secret sits here, in memory only.
 */
export class CredentialCache {
  private readonly cache: TtlCache<CredentialForAuth | null>;

  constructor(
    private readonly db: Db,
    private readonly keys: SecretsKey[],
    ttlMs: number,
    clock: Clock,
  ) {
    this.cache = new TtlCache(ttlMs, undefined, clock);
  }

  get(apiKeyHash: string): Promise<CredentialForAuth | null> {
    return this.cache.get(apiKeyHash, () => findCredentialForAuth(this.db, apiKeyHash, this.keys));
  }
}
