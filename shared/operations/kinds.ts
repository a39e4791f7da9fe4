import type { ProviderObjectKind } from '../providers/types';
import { paymentKind } from '../payments/kind';
import { payoutKind } from '../payouts/kind';
import { refundKind } from '../refunds/kind';
import { cardPaymentKind } from '../cards/kind';
import type { OperationKind } from './kind';

/** Every kind of provider operation, by the provider's word for it (callbacks and asks name it). */
export const KINDS: Record<ProviderObjectKind, OperationKind<any, any, any>> = {
  payment: paymentKind,
  refund: refundKind,
  payout: payoutKind,
  card_payment: cardPaymentKind,
};
