/**
 * The service's vocabulary: the closed sets of words the interface uses (decisions.md "Names").
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
