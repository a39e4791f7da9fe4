import { randomUUID } from 'node:crypto';
import type { Currency } from '../../../shared/vocabulary';
import { minorToDecimal } from '../../../shared/providers/amounts';

/**
 * The Airtel simulator's transaction report: the file an operator would download from Airtel's
 * partner portal, in the columns of shared/providers/airtel/README.md#transaction-report-reconciliation,
 * one row per money movement the simulator made (collections and disbursements when they ended,
 * refunds as their own records), closed by the TOTAL row with the wallet's balance. Injections put
 * on it what a real provider may: a reversal, another fee, another amount, a transaction we never
 * created, a transaction left off.
 */

export interface ReportRow {
  /** when it happened (ms) */
  at: number;
  /** our id as Airtel carries it; empty for a refund (Airtel names it by the collection's id) */
  transactionId: string;
  /** Airtel's id; a refund's is the refunded collection's */
  airtelMoneyId: string;
  type: 'COLLECTION' | 'DISBURSEMENT' | 'REFUND' | 'REVERSAL';
  status: 'TS' | 'TF';
  /** minor units, positive */
  amount: number;
  currency: Currency;
  msisdn: string;
}

export interface AirtelFinances {
  /** a later reversal of a completed collection (now) */
  reverse(transactionId: string): void;
  /** this transaction's fee, not the contract's */
  setFee(transactionId: string, fee: number): void;
  /** this transaction's amount on the report and in the wallet, not the one asked */
  setAmount(transactionId: string, amount: number): void;
  /** this transaction left off the report and the wallet */
  omit(transactionId: string): void;
  /** a completed collection nobody asked Airtel for: its Transaction ID (ours in form, unknown to us) */
  foreignCollection(amount: number, currency: Currency): string;
  /** every row, oldest first, with its fee */
  rows(): (ReportRow & { fee: number })[];
  /** the wallet: completed collections in, everything else and every fee out */
  balance(currency: Currency): number;
  /** the report of one currency's rows in [from, to) (all when not given), with its TOTAL row (naming the period when given) */
  report(currency: Currency, range?: { from: number; to: number }): string;
}

const HEADER = 'Date,Transaction ID,Airtel Money ID,Type,Status,Amount,Currency,Fee,MSISDN';
const KINSHASA_MS = 3_600_000;
const field = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
/** Kinshasa time (UTC+01:00), as the report's Date column is read */
const kinshasa = (ms: number) => new Date(ms + KINSHASA_MS).toISOString().replace('T', ' ').slice(0, 19);

export function airtelReport(records: () => ReportRow[], opts: { feeBps: number; now: () => number }): AirtelFinances {
  const fees = new Map<string, number>();
  const amounts = new Map<string, number>();
  const omitted = new Set<string>();
  const extra: ReportRow[] = [];
  let foreignCounter = 0;
  const feeOf = (amount: number) => Math.floor((amount * opts.feeBps + 5000) / 10000);
  const keyOf = (r: ReportRow) => r.transactionId || `refund-of:${r.airtelMoneyId}`;

  function rows(): (ReportRow & { fee: number })[] {
    const out: (ReportRow & { fee: number })[] = [];
    for (const r of [...records(), ...extra]) {
      const key = keyOf(r);
      if (omitted.has(key)) continue;
      const amount = r.type === 'REVERSAL' ? r.amount : (amounts.get(key) ?? r.amount);
      const fee = r.status !== 'TS' || r.type === 'REVERSAL' ? 0 : (fees.get(key) ?? feeOf(amount));
      out.push({ ...r, amount, fee });
    }
    return out.sort((a, b) => a.at - b.at);
  }

  const signed = (r: ReportRow & { fee: number }) =>
    r.status !== 'TS' ? 0 : (r.type === 'COLLECTION' ? r.amount : -r.amount) - r.fee;

  return {
    reverse(transactionId) {
      const r = records().find((x) => x.transactionId === transactionId && x.type === 'COLLECTION');
      if (!r || r.status !== 'TS') throw new Error(`no completed collection ${transactionId} to reverse`);
      extra.push({ ...r, at: opts.now(), type: 'REVERSAL', amount: amounts.get(transactionId) ?? r.amount });
    },
    setFee: (id, fee) => void fees.set(id, fee),
    setAmount: (id, amount) => void amounts.set(id, amount),
    omit: (id) => void omitted.add(id),
    foreignCollection(amount, currency) {
      foreignCounter += 1;
      const transactionId = `P${randomUUID().replace(/-/g, '')}`;
      extra.push({
        at: opts.now(),
        transactionId,
        airtelMoneyId: `MPFOREIGN.${String(foreignCounter).padStart(5, '0')}`,
        type: 'COLLECTION',
        status: 'TS',
        amount,
        currency,
        msisdn: '970000099',
      });
      return transactionId;
    },
    rows,
    balance: (currency) =>
      rows()
        .filter((r) => r.currency === currency)
        .reduce((s, r) => s + signed(r), 0),
    report(currency, range) {
      // the closing balance is the wallet's at the period's end: every row before it counts
      let running = 0;
      let count = 0;
      const lines = [HEADER];
      for (const r of rows().filter((x) => x.currency === currency)) {
        if (range && r.at >= range.to) break;
        running += signed(r);
        if (range && r.at < range.from) continue;
        count += 1;
        lines.push(
          [
            kinshasa(r.at),
            r.transactionId,
            r.airtelMoneyId,
            r.type,
            r.status,
            minorToDecimal(r.amount, currency, true),
            currency,
            minorToDecimal(r.fee, currency, true),
            r.msisdn,
          ]
            .map(field)
            .join(','),
        );
      }
      lines.push(
        `TOTAL,${count},${running < 0 ? '-' : ''}${minorToDecimal(Math.abs(running), currency, true)},${currency}` +
          (range ? `,${kinshasa(range.from)},${kinshasa(range.to)}` : ''),
      );
      return `${lines.join('\n')}\n`;
    },
  };
}
