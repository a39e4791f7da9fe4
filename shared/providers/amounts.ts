import type { Currency } from '../vocabulary';

/**
 * Exact conversions between our minor units (integers) and the decimal strings providers take
 * and echo ("100.5", "100.00"). No floating point at any step: the text is built and read digit
 * by digit, through bigint.
 */

/** Decimals of a currency's minor unit (ISO 4217; the service's own table). */
export const CURRENCY_EXPONENT: Record<Currency, number> = { USD: 2, CDF: 2 };

/**
 * Minor units as a decimal string in major units: `trailingZeros` false drops zeros after the
 * point and the point itself when nothing is left (pawaPay's pattern: "100.5", "100"); true
 * keeps the currency's every decimal ("100.50").
 */
export function minorToDecimal(minor: number, currency: Currency, trailingZeros = false): string {
  if (!Number.isSafeInteger(minor) || minor < 0)
    throw new RangeError(`amount ${minor} is not a non-negative safe integer`);
  const exponent = CURRENCY_EXPONENT[currency];
  const digits = minor.toString().padStart(exponent + 1, '0');
  const whole = digits.slice(0, digits.length - exponent);
  let fraction = digits.slice(digits.length - exponent);
  if (!trailingZeros) fraction = fraction.replace(/0+$/, '');
  return fraction.length > 0 ? `${whole}.${fraction}` : whole;
}

/** Decimals an amount needs in major units (2500 USD minor → "25" → 0; 2550 → 1; 2555 → 2). */
export function decimalsNeeded(minor: number, currency: Currency): number {
  const text = minorToDecimal(minor, currency);
  const point = text.indexOf('.');
  return point < 0 ? 0 : text.length - point - 1;
}

/**
 * A provider's decimal string as minor units, exactly; undefined when it is not a plain
 * non-negative decimal or has more decimals than the currency ("100.001" USD), or is too large.
 */
export function decimalToMinor(text: string, currency: Currency): number | undefined {
  const m = /^(\d{1,15})(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  const exponent = CURRENCY_EXPONENT[currency];
  const fraction = (m[2] ?? '').replace(/0+$/, '');
  if (fraction.length > exponent) return undefined;
  const minor = BigInt(m[1]) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, '0') || '0');
  return minor <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(minor) : undefined;
}
