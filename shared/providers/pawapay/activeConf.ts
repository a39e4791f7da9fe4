import type { Currency, Direction, Operator } from '../../vocabulary';
import { CURRENCY_EXPONENT } from '../amounts';
import type { AmountRule, ProviderAvailability } from '../connector';
import {
  DIRECTION_OF,
  OPERATOR_OF,
  decimalsOf,
  fromPawapayAmount,
  ourCurrency,
  type OperationType,
  type PawapayProvider,
} from './wire';

/**
 * pawaPay's active configuration (GET /v2/active-conf,
 * https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration) read into our amount
 * rules, and its availability (GET /v2/availability) into ours. Both shapes seen for
 * `operationTypes` are read: an object keyed by type ({"DEPOSIT": {...}}) and an array of objects
 * naming their type ([{"operationType": "DEPOSIT", ...}]).
 */

/** key: operator|currency|direction */
export type AmountRules = Map<string, AmountRule>;
export const ruleKey = (operator: Operator, currency: Currency, direction: Direction) =>
  `${operator}|${currency}|${direction}`;

/**
 * What holds until the first active-conf answer: decimals per provider and currency from the
 * providers page (https://docs.pawapay.io/v2/docs/providers: VODACOM_MPESA_COD takes no decimals in
 * CDF; the others take two), and no min/max (pawaPay's own AMOUNT_OUT_OF_BOUNDS refuses what is
 * outside; limits differ per account, so none is guessed).
 */
export function defaultRules(): AmountRules {
  const rules: AmountRules = new Map();
  const decimals: Record<PawapayProvider, Record<Currency, number>> = {
    VODACOM_MPESA_COD: { CDF: 0, USD: 2 },
    AIRTEL_COD: { CDF: 2, USD: 2 },
    ORANGE_COD: { CDF: 2, USD: 2 },
  };
  for (const [provider, perCurrency] of Object.entries(decimals) as [PawapayProvider, Record<Currency, number>][]) {
    for (const [currency, d] of Object.entries(perCurrency) as [Currency, number][]) {
      for (const direction of ['collection', 'payout', 'refund'] as Direction[]) {
        rules.set(ruleKey(OPERATOR_OF[provider], currency, direction), { decimals: d, min: null, max: null });
      }
    }
  }
  return rules;
}

type Loose = Record<string, unknown>;
const isObj = (v: unknown): v is Loose => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** operationTypes in either shape → [type, its object or its status string]. */
export function operationEntries(v: unknown): [string, unknown][] {
  if (Array.isArray(v)) {
    return v
      .filter(isObj)
      .flatMap((o) => (typeof o.operationType === 'string' ? [[o.operationType, o] as [string, unknown]] : []));
  }
  if (isObj(v)) return Object.entries(v);
  return [];
}

/**
 * The rules of an active-conf answer, for the DRC providers we route to; a provider, currency or
 * operation type it does not list is absent (cannot be carried). Limits are read as amounts of the
 * currency (minAmount/maxAmount, or the older minTransactionLimit/maxTransactionLimit).
 */
export function parseActiveConf(body: unknown): AmountRules {
  const rules: AmountRules = new Map();
  if (!isObj(body)) throw new Error('active-conf: not an object');
  for (const country of list(body.countries)) {
    if (!isObj(country)) continue;
    for (const p of list(country.providers)) {
      if (!isObj(p) || typeof p.provider !== 'string') continue;
      const operator = OPERATOR_OF[p.provider as PawapayProvider];
      if (!operator) continue;
      for (const c of list(p.currencies)) {
        if (!isObj(c)) continue;
        const currency = ourCurrency(c.currency);
        if (!currency) continue;
        for (const [type, conf] of operationEntries(c.operationTypes)) {
          const direction = DIRECTION_OF[type as OperationType];
          if (!direction || !isObj(conf)) continue;
          const d = decimalsOf(conf.decimalsInAmount);
          const min = fromPawapayAmount(conf.minAmount ?? conf.minTransactionLimit, currency);
          const max = fromPawapayAmount(conf.maxAmount ?? conf.maxTransactionLimit, currency);
          rules.set(ruleKey(operator, currency, direction), {
            // unknown decimals: the safe reading is none
            decimals: Math.min(d ?? 0, CURRENCY_EXPONENT[currency]),
            min: min ?? null,
            max: max ?? null,
          });
        }
      }
    }
  }
  return rules;
}

const AVAILABILITY: Record<string, 'operational' | 'delayed' | 'closed'> = {
  OPERATIONAL: 'operational',
  DELAYED: 'delayed',
  CLOSED: 'closed',
};

/** GET /v2/availability → per operator and direction; CLOSED → closed, DELAYED → delayed, anything else operational. */
export function parseAvailability(body: unknown): ProviderAvailability {
  const out: ProviderAvailability = {};
  for (const country of list(body)) {
    if (!isObj(country)) continue;
    for (const p of list(country.providers)) {
      if (!isObj(p) || typeof p.provider !== 'string') continue;
      const operator = OPERATOR_OF[p.provider as PawapayProvider];
      if (!operator) continue;
      for (const [type, value] of operationEntries(p.operationTypes)) {
        const direction = DIRECTION_OF[type as OperationType];
        if (!direction) continue;
        const status = typeof value === 'string' ? value : isObj(value) ? value.status : undefined;
        (out[operator] ??= {})[direction] = AVAILABILITY[String(status)] ?? 'operational';
      }
    }
  }
  return out;
}
