import type { ProviderObjectKind } from './providers/types';
import { mobileMoneyPaymentKind } from './payments/kind';
import { payoutKind } from './payouts/kind';
import { refundKind } from './refunds/kind';
import { cardPaymentKind } from './cards/kind';
import type { OperationKind } from './operations/kind';

/**
 * Every kind of provider operation, by the provider's word for it (callbacks and asks name it):
 * the registry of the composition roots (the web and the pools' entry points), which hand it to
 * the kernel. The kernel (shared/operations) knows a kind only through the table it is given.
 */
export type Kinds = Record<ProviderObjectKind, OperationKind<any, any, any>>;

export const KINDS: Kinds = {
  payment: mobileMoneyPaymentKind,
  refund: refundKind,
  payout: payoutKind,
  card_payment: cardPaymentKind,
};
