/**
 * Client phone numbers (decisions.md): `243` and 9 digits. In live the national prefix (the two
 * digits after 243) must belong to the operator. Test keys skip the prefix rule, so the sandbox
 * numbers (whose prefix 99 is airtel's) go with any operator.
 */

import { OPERATORS, type Operator } from '../vocabulary';
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
