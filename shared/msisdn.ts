/**
 * Client phone numbers (docs/decisions.md#names): `243` and 9 digits. In live the national prefix (the two
 * digits after 243) must belong to the operator. Test keys skip the prefix rule, so the sandbox
 * numbers (whose prefix 99 is airtel's) go with any operator.
 */

import { OPERATORS, type Operator } from './vocabulary';
export { OPERATORS, type Operator };

export const MSISDN_PATTERN = '^243[0-9]{9}$';
const MSISDN_RE = new RegExp(MSISDN_PATTERN);

export const OPERATOR_PREFIXES: Record<Operator, string[]> = {
  vodacom: ['81', '82', '83'],
  airtel: ['97', '98', '99'],
  orange: ['80', '84', '85', '89'],
  africell: ['90', '91'],
};

export const isMsisdn = (s: string) => MSISDN_RE.test(s);

/** True when `msisdn` may be pushed through `operator` in `environment`. */
export function operatorAccepts(environment: 'test' | 'live', operator: Operator, msisdn: string): boolean {
  if (environment === 'test') return true;
  return OPERATOR_PREFIXES[operator].includes(msisdn.slice(3, 5));
}

/** Longest text the number lookup reads (a typed number with its separators). */
const MAX_TYPED_LENGTH = 32;

/** Why a typed number cannot be a DRC mobile number; the `number` lookup answers it as 400. */
export class PhoneNumberProblem extends Error {}

/**
 * What people type, normalised (docs/decisions.md#integrators-kit): spaces, dots, dashes and
 * brackets are dropped; `+243…`, `00243…`, `243…` (then 9 digits) and the national `0…` form
 * (10 digits) are accepted; the operator comes from the two digits after 243. Throws
 * PhoneNumberProblem with the reason otherwise.
 */
export function lookupPhoneNumber(input: string): { msisdn: string; operator: Operator } {
  if (input.length > MAX_TYPED_LENGTH)
    throw new PhoneNumberProblem(`number must be at most ${MAX_TYPED_LENGTH} characters`);
  const compact = input.replace(/[\s.\-()[\]]/g, '');
  if (!/^\+?[0-9]+$/.test(compact)) {
    throw new PhoneNumberProblem('number may hold only digits, a leading +, spaces, dots, dashes and brackets');
  }
  const national = /^(?:\+243|00243|243)([0-9]*)$/.exec(compact)?.[1] ?? /^0([0-9]*)$/.exec(compact)?.[1];
  if (national === undefined) throw new PhoneNumberProblem('number must start with +243, 00243, 243 or the national 0');
  if (national.length !== 9) {
    throw new PhoneNumberProblem(
      `number must have 9 digits after the country code or 10 in the national 0 form (got ${national.length} after the prefix)`,
    );
  }
  const prefix = national.slice(0, 2);
  const operator = OPERATORS.find((op) => OPERATOR_PREFIXES[op].includes(prefix));
  if (!operator)
    throw new PhoneNumberProblem(
      `number has the prefix ${prefix}, which belongs to no mobile-money operator (${Object.values(OPERATOR_PREFIXES).flat().join(', ')})`,
    );
  return { msisdn: `243${national}`, operator };
}
