import type { CallbackHandler } from '../providers/inbox';
import type { PaymentTrigger } from '../domain/payment';
import { lockPayment } from './rows';
import { applyToLockedPayment } from './transition';

const TRIGGERS: Record<'succeeded' | 'failed' | 'cancelled', PaymentTrigger> = {
  succeeded: 'succeed',
  failed: 'fail',
  cancelled: 'cancel',
};

/**
 * Applies a provider's payment callback under the payment's row lock. Only the provider that
 * handles the payment may settle it: a callback verified with another provider's secret (the
 * sandbox's, for a live payment) changes nothing.
 */
export const applyPaymentCallback: CallbackHandler = async (trx, outbox, cb, provider) => {
  const p = await lockPayment(trx, cb.objectId);
  if (!p) return 'unknown-object';
  if (p.provider !== provider.id || p.environment !== provider.environment) return 'provider-mismatch';
  const { outcome } = await applyToLockedPayment(trx, outbox, p, TRIGGERS[cb.status], {
    reason: 'provider-callback',
    providerRef: cb.providerRef,
    failureCode: cb.failureCode,
    failureMessage: cb.failureMessage,
  });
  return outcome;
};
