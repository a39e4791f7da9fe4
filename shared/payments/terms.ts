import { Merchant } from '../db/models';
import type { Executor } from '../db/knex';
import type { Caches } from '../ttlCache';

/** What a merchant's configuration says about its payments: fee bearer, fees, per-transaction limits. */
export type MerchantTerms = Pick<Merchant, 'fee_bearer' | 'fees' | 'per_tx_limit_usd' | 'per_tx_limit_cdf'>;

/**
 * A merchant's terms, kept in this process for `ttlMs` (CREDENTIAL_CACHE_MS, default 5 s, the
 * same bound the credential cache puts on suspension): a fee or limit change reaches every web
 * process within that time, and POST /v1/payments saves a query.
 */
export function merchantTerms(
  deps: { db: Executor; caches: Caches },
  ttlMs: number,
  merchantId: string,
): Promise<MerchantTerms | undefined> {
  return deps.caches
    .ttl<MerchantTerms | undefined>('merchant-terms', ttlMs)
    .get(merchantId, async () =>
      Merchant.query(deps.db).findById(merchantId).select('fee_bearer', 'fees', 'per_tx_limit_usd', 'per_tx_limit_cdf'),
    );
}
