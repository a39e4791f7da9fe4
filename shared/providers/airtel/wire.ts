import { createHash } from 'node:crypto';
import type { Currency } from '../../vocabulary';
import { decimalToMinor, minorToDecimal } from '../amounts';
import type { ProviderObjectKind } from '../types';

/**
 * What goes on Airtel's wire and back, exactly: amounts as JSON numbers in major units, national
 * phone numbers, and the deterministic mapping between our ids and Airtel's `transaction.id`.
 * Reference: https://developers.airtel.africa/documentation (Collection API, Disbursement API).
 */

// ---------------------------------------------------------------------------------------------
// Amounts

/**
 * A JSON number written from its decimal text, never from a float: `new JsonNumber("10.1")`
 * appears in the body as `10.1`, digit for digit.
 */
export class JsonNumber {
  constructor(readonly text: string) {
    if (!/^(0|[1-9]\d*)(\.\d+)?$/.test(text)) throw new RangeError(`"${text}" is not a plain decimal`);
  }
}

/**
 * JSON text of a value whose numbers are JsonNumbers (plain numbers are refused: every number on
 * Airtel's wire is an amount, and an amount never passes through a float on its way out).
 */
export function writeJson(value: unknown): string {
  if (value instanceof JsonNumber) return value.text;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return String(value);
    throw new TypeError('writeJson takes amounts as JsonNumber, never as a float');
  }
  if (Array.isArray(value)) return `[${value.map(writeJson).join(',')}]`;
  if (typeof value === 'object') {
    const parts: string[] = [];
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v === undefined) continue;
      parts.push(`${JSON.stringify(k)}:${writeJson(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  throw new TypeError(`cannot write ${typeof value} as JSON`);
}

/** Minor units as Airtel's `amount`: major units, no trailing zeros ("10.5", "100"). */
export const amountOnWire = (minor: number, currency: Currency) =>
  new JsonNumber(minorToDecimal(minor, currency, false));

/**
 * A JSON number Airtel sent (parsed by JSON.parse into a double), back to minor units, exactly;
 * undefined when it cannot be an amount of that currency.
 *
 * Why this is exact: the amounts we deal in are at most 10^12 minor units, so at most 13
 * significant decimal digits. Any decimal of at most 15 significant digits parses to a double
 * that no other decimal of at most 15 digits parses to, and Number#toString writes the
 * shortest decimal that parses back to the same double: that shortest text has at most as many
 * digits as the original and parses to the same double, so it is the original's value (trailing
 * zeros aside: "100.50" reads back "100.5"). Exponent forms (1e21 and up, below 1e-6) are refused.
 * A string amount ("100.00", as some answers echo) is read as text directly.
 */
export function amountFromWire(value: unknown, currency: Currency): number | undefined {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return undefined;
    text = String(value);
    if (/e/i.test(text)) return undefined;
    const digits = text.replace('.', '').replace(/^0+/, '');
    if (digits.length > 15) return undefined;
  } else if (typeof value === 'string') {
    text = value.trim();
  } else return undefined;
  return decimalToMinor(text, currency);
}

/** Decimals a JSON number carries, read the same exact way (for the simulator's "too many decimals"). */
export function decimalsOf(value: number): number | undefined {
  if (!Number.isFinite(value)) return undefined;
  const text = String(value);
  if (/e/i.test(text)) return undefined;
  const point = text.indexOf('.');
  return point < 0 ? 0 : text.length - point - 1;
}

// ---------------------------------------------------------------------------------------------
// Phone numbers

/** Ours (243 + 9 digits) to Airtel's `msisdn`: the national 9 digits, no country code, no leading 0. */
export function nationalMsisdn(msisdn: string): string {
  const m = /^243(\d{9})$/.exec(msisdn);
  if (!m) throw new RangeError('msisdn is not 243 followed by 9 digits');
  return m[1];
}

/** Airtel's national 9 digits back to ours. */
export function internationalMsisdn(national: string): string {
  if (!/^\d{9}$/.test(national)) throw new RangeError('national number is not 9 digits');
  return `243${national}`;
}

// ---------------------------------------------------------------------------------------------
// Ids

/**
 * How our ids appear as Airtel's `transaction.id` (the reference gives no length or alphabet;
 * its example is "random-unique-id"; see ./README.md#unclear-points-and-the-choices-made, point 2):
 * - `compact` (default): one letter for the kind (P payment, R refund, O payout) and the UUID's
 *   32 hex digits without dashes: 33 characters, letters and digits only;
 * - `ours`: our id as it is (`pay_<uuid>`, 40 characters, with `_` and `-`).
 * Both are deterministic and reversible, so a resend after a crash reuses the id.
 */
export type IdFormat = 'compact' | 'ours';

const PREFIX: Record<'payment' | 'refund' | 'payout', { ours: string; letter: string }> = {
  payment: { ours: 'pay_', letter: 'P' },
  refund: { ours: 're_', letter: 'R' },
  payout: { ours: 'po_', letter: 'O' },
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function kindOfOurs(id: string): 'payment' | 'refund' | 'payout' | undefined {
  if (id.startsWith('pay_')) return 'payment';
  if (id.startsWith('re_')) return 'refund';
  if (id.startsWith('po_')) return 'payout';
  return undefined;
}

/** Our id (pay_/re_/po_ + UUID) as Airtel's transaction.id. */
export function toAirtelId(ourId: string, format: IdFormat = 'compact'): string {
  const kind = kindOfOurs(ourId);
  const uuid = kind ? ourId.slice(PREFIX[kind].ours.length) : '';
  if (!kind || !UUID.test(uuid)) throw new RangeError(`"${ourId}" is not one of our operation ids`);
  return format === 'ours' ? ourId : `${PREFIX[kind].letter}${uuid.replace(/-/g, '')}`;
}

/** Airtel's transaction.id back to our id and its kind; undefined when it is not one we sent. */
export function fromAirtelId(airtelId: string): { id: string; kind: ProviderObjectKind } | undefined {
  const compact = /^([PRO])([0-9a-f]{32})$/.exec(airtelId);
  if (compact) {
    const kind = (Object.keys(PREFIX) as (keyof typeof PREFIX)[]).find((k) => PREFIX[k].letter === compact[1])!;
    const h = compact[2];
    return {
      kind,
      id: `${PREFIX[kind].ours}${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`,
    };
  }
  const kind = kindOfOurs(airtelId);
  if (kind && UUID.test(airtelId.slice(PREFIX[kind].ours.length))) return { kind, id: airtelId };
  return undefined;
}

/**
 * Airtel's `reference` ("Reference for service / goods purchased"; clients report 4 to 64
 * letters and digits): the description's letters, digits and spaces, else the transaction id.
 */
export function referenceOf(description: string | null, fallback: string): string {
  const cleaned = (description ?? '')
    .replace(/[^A-Za-z0-9 ]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 64)
    .trim();
  return cleaned.length >= 4 ? cleaned : fallback.slice(0, 64);
}

/** A stable digest naming one callback (a repeat of it keeps it). */
export const digest = (...parts: string[]) => createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 40);
