import { MAX_AMOUNT } from '../money';

/**
 * Fees of docs/decisions.md#payments, in integers only: fee = round_half_up(amount * percent_bps / 10000) +
 * fixed, computed on `amount` whoever bears it. The product is taken in BigInt because
 * amount * percent_bps can pass Number.MAX_SAFE_INTEGER.
 */

export interface FeeRule {
  percent_bps: number;
  fixed: number;
}

export type FeeBearer = 'merchant' | 'customer';

/** round_half_up(n / d) for non-negative integers n and positive d. */
export function divRoundHalfUp(n: bigint, d: bigint): bigint {
  if (n < 0n || d <= 0n) throw new RangeError('divRoundHalfUp expects n >= 0 and d > 0');
  return (n * 2n + d) / (d * 2n);
}

export function feeFor(amount: number, rule: FeeRule): number {
  const pct = divRoundHalfUp(BigInt(amount) * BigInt(rule.percent_bps), 10_000n);
  return Number(pct + BigInt(rule.fixed));
}

export class FeeError extends Error {}

/**
 * Splits a payment's amount into what the client pays and what the merchant receives. Throws a
 * FeeError when the merchant would receive less than 1 or a total leaves the safe integers.
 */
export function splitFees(amount: number, rule: FeeRule, bearer: FeeBearer) {
  const fee = feeFor(amount, rule);
  const split =
    bearer === 'merchant'
      ? { fee, amountCharged: amount, amountNet: amount - fee }
      : { fee, amountCharged: amount + fee, amountNet: amount };
  if (split.amountNet < 1) throw new FeeError('the amount does not cover the fee');
  if (!Number.isSafeInteger(split.fee) || !Number.isSafeInteger(split.amountCharged))
    throw new FeeError('the amount with its fee is too large');
  // docs/decisions.md#payments: every amount and fee is at most 10^12 minor units
  if (split.fee > MAX_AMOUNT || split.amountCharged > MAX_AMOUNT)
    throw new FeeError(`the amount with its fee is above ${MAX_AMOUNT} minor units`);
  return split;
}
