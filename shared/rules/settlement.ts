import type { AccountKind } from './ledger';
import { narrow, type Exact } from '../money';

/**
 * Settlement (pure). Glossary:
 * - settlement: the daily batch of one merchant, environment and currency. It covers the
 *   merchant's ledger transactions that moved its `available` balance and that no earlier batch
 *   covered, created before the batch's period_end (the daily cut-off).
 * - covered kinds (COVERED_KINDS): not the `*_deliver` postings, which move in_transit to the
 *   provider and leave `available` untouched.
 *
 * Figures, all in minor units, from the entries of the covered transactions:
 * - gross: amount_charged of the payments credited (their available entry plus their fee entry);
 * - fees: the service's fees on those payments;
 * - refunds: what refunds took from available, less what failed refunds gave back;
 * - payouts: the same for payouts, their fees included (the debit takes amount + fee together);
 * - net: the sum of every covered entry on available, so net = gross - fees - refunds - payouts;
 * - count: the number of covered transactions.
 * A return posted in a later period than its debit lowers that later period's refunds or payouts.
 * Figures are summed exactly (BigInt), whatever their size: a number while safe, a bigint beyond.
 */

export const COVERED_KINDS = [
  'payment_credit',
  'refund_debit',
  'refund_return',
  'payout_debit',
  'payout_return',
] as const;
export type CoveredKind = (typeof COVERED_KINDS)[number];

export interface CoveredEntry {
  owner: string;
  account: AccountKind;
  /** an exact sum of entries (integer text from Postgres, or a number) */
  amount: Exact | string;
}

/** The covered transactions of one kind: how many, and their entries summed per account. */
export interface CoveredKindTotal {
  kind: string;
  transactions: number;
  entries: CoveredEntry[];
}

function sum(entries: CoveredEntry[], match: (e: CoveredEntry) => boolean): bigint {
  return entries.filter(match).reduce((total, e) => total + BigInt(e.amount), 0n);
}

/** The batch figures of a merchant's covered transactions (throws on a kind no batch covers). */
export function settlementFigures(merchantId: string, totals: CoveredKindTotal[]) {
  let [gross, fees, refunds, payouts, net, count] = [0n, 0n, 0n, 0n, 0n, 0];
  for (const t of totals) {
    const available = sum(t.entries, (e) => e.owner === merchantId && e.account === 'available');
    switch (t.kind as CoveredKind) {
      case 'payment_credit': {
        const fee = sum(t.entries, (e) => e.account === 'fees');
        gross += available + fee;
        fees += fee;
        break;
      }
      case 'refund_debit':
      case 'refund_return':
        refunds -= available;
        break;
      case 'payout_debit':
      case 'payout_return':
        payouts -= available;
        break;
      default:
        throw new Error(`ledger transaction kind ${t.kind} has no place in a settlement`);
    }
    net += available;
    count += t.transactions;
  }
  return {
    gross: narrow(gross),
    fees: narrow(fees),
    refunds: narrow(refunds),
    payouts: narrow(payouts),
    net: narrow(net),
    count,
  };
}

export type SettlementFigures = ReturnType<typeof settlementFigures>;

/** "HH:MM" (UTC) → minutes after midnight; null when malformed. */
export function parseDailyTime(raw: string): number | null {
  const m = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(raw);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

const DAY_S = 86_400;

/** The latest daily cut-off at or before `nowUnix` (Unix seconds): the period_end a batch made now gets. */
export function lastCutoff(nowUnix: number, minutesUtc: number): number {
  const today = Math.floor(nowUnix / DAY_S) * DAY_S + minutesUtc * 60;
  return today <= nowUnix ? today : today - DAY_S;
}
