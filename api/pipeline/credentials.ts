import type { SecretsKey } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import { findCredentialForAuth, type CredentialForAuth } from '../../shared/merchants/auth';

interface Entry {
  at: number;
  value: Promise<CredentialForAuth | null>;
}

/**
 * Credentials by API key hash, kept in this process for `ttlMs` (CREDENTIAL_CACHE_MS, default
 * 5 s): revocation and merchant suspension reach every web process within that time. Unknown
 * hashes are remembered too (a client retrying a bad key costs one query per TTL). Concurrent
 * misses on one hash share one query. The decrypted secret sits here, in memory only.
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly keys: SecretsKey[],
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(apiKeyHash: string): Promise<CredentialForAuth | null> {
    const now = Date.now();
    const hit = this.entries.get(apiKeyHash);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = findCredentialForAuth(this.db, apiKeyHash, this.keys);
    if (this.ttlMs > 0) {
      const entry = { at: now, value };
      this.entries.delete(apiKeyHash); // re-insert at the end: Map order is the eviction order
      this.entries.set(apiKeyHash, entry);
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      // a failed query is not remembered
      value.catch(() => {
        if (this.entries.get(apiKeyHash) === entry) this.entries.delete(apiKeyHash);
      });
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}
