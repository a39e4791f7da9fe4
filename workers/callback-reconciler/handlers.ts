import type { CallbackHandlers } from '../../shared/providers/inbox';
import { applyPaymentCallback } from '../../shared/payments/callbacks';
import { applyPayoutCallback } from '../../shared/payouts/callbacks';
import { applyRefundCallback } from '../../shared/refunds/callbacks';

/**
 * One handler per object kind a provider reports on. Refund and payout handlers join here, each
 * from its own module, with the same signature as applyPaymentCallback.
 */
export const callbackHandlers: CallbackHandlers = {
  payment: applyPaymentCallback,
  refund: applyRefundCallback,
  payout: applyPayoutCallback,
};
