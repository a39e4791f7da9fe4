/**
 * The service's vocabulary: the closed sets of words the interface uses (docs/decisions.md#names).
 * Every module takes these types from here.
 */

export type Environment = 'test' | 'live';
export const ENVIRONMENTS: readonly Environment[] = ['test', 'live'];

export type Currency = 'USD' | 'CDF';
export const CURRENCIES: readonly Currency[] = ['USD', 'CDF'];

/** The four mobile-money operators of the DRC (the `operator` field). */
export type Operator = 'vodacom' | 'airtel' | 'orange' | 'africell';
export const OPERATORS: Operator[] = ['vodacom', 'airtel', 'orange', 'africell'];

export const EVENT_TYPES = [
  'payment.succeeded',
  'payment.failed',
  'payment.cancelled',
  'refund.succeeded',
  'refund.failed',
  'payout.succeeded',
  'payout.failed',
  'settlement.completed',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The statuses each kind of operation shows (its state machine: shared/operations/kindMachines.ts). */
export type PaymentStatus = 'pending' | 'processing' | 'succeeded' | 'failed' | 'cancelled' | 'refunded';
/** A card payment takes every status of a payment: `refunded` by the operator's refunds (docs/decisions.md#operator-admin-api). */
export type CardPaymentStatus = PaymentStatus;
export type RefundStatus = 'pending' | 'succeeded' | 'failed';
export type PayoutStatus = 'pending' | 'processing' | 'succeeded' | 'failed';

/** An operator's directions (GET /v1/availability, operator closures). */
export type Direction = 'collection' | 'payout' | 'refund';
export const DIRECTIONS: Direction[] = ['collection', 'payout', 'refund'];

/** A value of a payment's or payout's `metadata`. */
export type MetadataValue = string | number | boolean;
