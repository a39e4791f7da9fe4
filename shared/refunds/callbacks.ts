import type { CallbackHandler } from '../providers/inbox';
import { lockRefund } from './rows';
import { applyToLockedRefund } from './transition';

/**
 * Applies a provider's refund callback under the refund's row lock. Only the provider that
 * handles the refund may settle it; a provider's `cancelled` is a refusal like `failed`.
 */
export const applyRefundCallback: CallbackHandler = async (trx, outbox, cb, provider) => {
  const r = await lockRefund(trx, cb.objectId);
  if (!r) return 'unknown-object';
  if (r.provider !== provider.id || r.environment !== provider.environment) return 'provider-mismatch';
  return applyToLockedRefund(trx, outbox, r, cb.status === 'succeeded' ? 'provider_succeeded' : 'provider_failed', {
    reason: 'provider-callback',
    providerRef: cb.providerRef,
    failureCode: cb.failureCode,
    failureMessage: cb.failureMessage,
  });
};
