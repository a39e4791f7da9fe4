import { randomBytes } from 'node:crypto';

/**
 * Money beyond the safe integers. Every amount, fee and limit given is at most MAX_AMOUNT (10^12
 * minor units; docs/decisions.md#faults-and-limits), a safe integer. Sums of them (balances,
 * settlement figures) are unbounded: summed in Postgres, read as text and kept as an `Exact`
 * (a bigint beyond the safe integers), and written in JSON as a plain number with every digit.
 */

export const MAX_AMOUNT = 1_000_000_000_000;

/** An exact integer: a number when safe, a bigint beyond (arithmetic mixing them throws: loud, never rounded). */
export type Exact = number | bigint;

/** Integer text (a Postgres bigint or numeric sum) as an exact value. */
export function exact(value: string | number | bigint): Exact {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`${value} is not a safe integer`);
    return value;
  }
  return narrow(BigInt(value));
}

/** A bigint as a number when it is a safe integer. */
export function narrow(big: bigint): Exact {
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

// a marker no real string can hold (NUL is refused at every edge, and the token is random)
const TOKEN = randomBytes(8).toString('hex');
const MARKER = new RegExp(`"\\\\u0000${TOKEN}:(-?\\d+)"`, 'g');

/** JSON.stringify that writes bigints as exact JSON numbers (JSON.stringify alone throws on them). */
export function exactJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `\u0000${TOKEN}:${v}` : v)).replace(MARKER, '$1');
}
