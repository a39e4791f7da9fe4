import type { Executor } from '../db/knex';
import type { Currency } from '../domain/ledger';
import type { FeeRule } from '../domain/fees';

/** What a merchant's configuration says about its payments: fee bearer, fees, per-transaction limits. */
export interface MerchantTerms {
  fee_bearer: 'merchant' | 'customer';
  fees: Record<Currency, FeeRule>;
  per_tx_limit_usd: number | null;
  per_tx_limit_cdf: number | null;
}

interface Entry {
  at: number;
  value: Promise<MerchantTerms | undefined>;
}

/**
 * Merchant terms kept in this process for `ttlMs` (CREDENTIAL_CACHE_MS, default 5 s, the same
 * bound the credential cache puts on suspension): a fee or limit change reaches every web
 * process within that time, and POST /v1/payments saves a query. Concurrent misses share one
 * query; a failed query is not remembered.
 */
export class MerchantTermsCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(db: Executor, merchantId: string): Promise<MerchantTerms | undefined> {
    const now = Date.now();
    const hit = this.entries.get(merchantId);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    // a knex builder runs its query again at every await: keep the promise of one run
    const value: Promise<MerchantTerms | undefined> = Promise.resolve(
      db('merchants').where({ id: merchantId }).first('fee_bearer', 'fees', 'per_tx_limit_usd', 'per_tx_limit_cdf'),
    );
    if (this.ttlMs > 0) {
      const entry = { at: now, value };
      this.entries.delete(merchantId);
      this.entries.set(merchantId, entry);
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      value.catch(() => {
        if (this.entries.get(merchantId) === entry) this.entries.delete(merchantId);
      });
    }
    return value;
  }
}

const caches = new WeakMap<object, MerchantTermsCache>();

/** One cache per service context (per web process; per test environment in tests). */
export function termsCacheFor(owner: object, ttlMs: number): MerchantTermsCache {
  let c = caches.get(owner);
  if (!c) caches.set(owner, (c = new MerchantTermsCache(ttlMs)));
  return c;
}
