import type { CallbackHandler } from '../providers/inbox';
import { lockPayout } from './rows';
import { applyToLockedPayout } from './transition';

/**
 * Applies a provider's payout callback under the payout's row lock. Only the provider that
 * handles the payout may settle it; a provider's `cancelled` is a refusal like `failed`.
 */
export const applyPayoutCallback: CallbackHandler = async (trx, outbox, cb, provider) => {
  const p = await lockPayout(trx, cb.objectId);
  if (!p) return 'unknown-object';
  if (p.provider !== provider.id || p.environment !== provider.environment) return 'provider-mismatch';
  return applyToLockedPayout(trx, outbox, p, cb.status === 'succeeded' ? 'provider_succeeded' : 'provider_failed', {
    reason: 'provider-callback',
    providerRef: cb.providerRef,
    failureCode: cb.failureCode,
    failureMessage: cb.failureMessage,
  });
};
