import { Merchant } from '../db/models';
import type { Executor } from '../db/knex';
import type { Currency } from '../domain/ledger';
import type { FeeRule } from '../domain/fees';
import { systemClock, type Clock } from '../clock';
import { TtlCache } from '../ttlCache';

/** What a merchant's configuration says about its payments: fee bearer, fees, per-transaction limits. */
export interface MerchantTerms {
  fee_bearer: 'merchant' | 'customer';
  fees: Record<Currency, FeeRule>;
  per_tx_limit_usd: number | null;
  per_tx_limit_cdf: number | null;
}

/**
 * Merchant terms kept in this process for `ttlMs` (CREDENTIAL_CACHE_MS, default 5 s, the same
 * bound the credential cache puts on suspension): a fee or limit change reaches every web
 * process within that time, and POST /v1/payments saves a query.
 */
export class MerchantTermsCache {
  private readonly cache: TtlCache<MerchantTerms | undefined>;

  constructor(ttlMs: number, clock: Clock) {
    this.cache = new TtlCache(ttlMs, undefined, clock);
  }

  get(db: Executor, merchantId: string): Promise<MerchantTerms | undefined> {
    return this.cache.get(merchantId, async () => Merchant.query(db).findById(merchantId).select('fee_bearer', 'fees', 'per_tx_limit_usd', 'per_tx_limit_cdf'));
  }
}

const caches = new WeakMap<object, MerchantTermsCache>();

/** One cache per service context (per web process; per test environment in tests). */
export function termsCacheFor(owner: object, ttlMs: number, clock: Clock = systemClock): MerchantTermsCache {
  let c = caches.get(owner);
  if (!c) caches.set(owner, (c = new MerchantTermsCache(ttlMs, clock)));
  return c;
}
