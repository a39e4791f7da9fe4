import { randomUUID } from 'node:crypto';
import type { Currency } from '../../../shared/vocabulary';
import { minorToDecimal } from '../../../shared/providers/amounts';

/**
 * The MPGS simulator's transaction report: the CSV an operator would download from Merchant
 * Administration's transaction search, in the columns of
 * shared/providers/mpgs/README.md#transaction-report-reconciliation (read by `mpgsReportParser`,
 * format `mpgs-csv`), one row per PAYMENT, REFUND and VOID the simulator ended. The gateway writes
 * no fee and no trailer. Injections put on it what a real gateway may: a later reversal (a void or
 * a chargeback), another amount, a transaction we never created, a transaction left off.
 */

export type MpgsReportType = 'PAYMENT' | 'REFUND' | 'VOID_PAYMENT' | 'VOID_REFUND' | 'CHARGEBACK';

export interface MpgsReportRow {
  /** when it happened (ms) */
  at: number;
  /** our payment id (the gateway's order.id) */
  orderId: string;
  /** `pay-{n}`, our refund id, `void-…`, or the gateway's own for a chargeback */
  transactionId: string;
  type: MpgsReportType;
  result: 'SUCCESS' | 'FAILURE' | 'PENDING' | 'UNKNOWN';
  /** minor units, positive */
  amount: number;
  currency: Currency;
}

export interface MpgsFinances {
  /** a later reversal of the order's successful payment (now): a chargeback unless told a void */
  reverse(orderId: string, type?: 'CHARGEBACK' | 'VOID_PAYMENT'): void;
  /** this transaction's amount on the report, not the one asked (the order's payment unless a transaction id is given) */
  setAmount(orderId: string, amount: number, transactionId?: string): void;
  /** this order's rows (or one transaction's) left off the report */
  omit(orderId: string, transactionId?: string): void;
  /** a successful payment nobody asked the gateway for: its order id (ours in form, unknown to us) */
  foreignPayment(amount: number, currency: Currency): string;
  /** every row, oldest first, injections applied */
  rows(): MpgsReportRow[];
  /** the report of the rows in [from, to) (all when not given), of one currency when given */
  report(opts?: { from?: number; to?: number; currency?: Currency }): string;
}

export const MPGS_REPORT_HEADER = 'Order ID,Transaction ID,Transaction Type,Result,Amount,Currency,Date';
const field = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

export function mpgsReport(records: () => MpgsReportRow[], opts: { now: () => number }): MpgsFinances {
  const amounts = new Map<string, number>();
  const omitted = new Set<string>();
  const extra: MpgsReportRow[] = [];
  let chargebacks = 0;
  const key = (orderId: string, transactionId: string) => `${orderId}/${transactionId}`;
  const paymentOf = (orderId: string) =>
    records().find((r) => r.orderId === orderId && r.type === 'PAYMENT' && r.result === 'SUCCESS');

  function rows(): MpgsReportRow[] {
    const out: MpgsReportRow[] = [];
    for (const r of [...records(), ...extra]) {
      if (omitted.has(r.orderId) || omitted.has(key(r.orderId, r.transactionId))) continue;
      out.push({ ...r, amount: amounts.get(key(r.orderId, r.transactionId)) ?? r.amount });
    }
    return out.sort((a, b) => a.at - b.at);
  }

  return {
    reverse(orderId, type = 'CHARGEBACK') {
      const p = paymentOf(orderId);
      if (!p) throw new Error(`no successful payment on order ${orderId} to reverse`);
      chargebacks += 1;
      extra.push({
        ...p,
        at: opts.now(),
        transactionId: type === 'CHARGEBACK' ? `chargeback-${chargebacks}` : `void-${p.transactionId}`,
        type,
        amount: amounts.get(key(orderId, p.transactionId)) ?? p.amount,
      });
    },
    setAmount(orderId, amount, transactionId) {
      const id = transactionId ?? paymentOf(orderId)?.transactionId;
      if (!id) throw new Error(`no successful payment on order ${orderId}`);
      amounts.set(key(orderId, id), amount);
    },
    omit: (orderId, transactionId) => void omitted.add(transactionId ? key(orderId, transactionId) : orderId),
    foreignPayment(amount, currency) {
      const orderId = `pay_${randomUUID()}`;
      extra.push({
        at: opts.now(),
        orderId,
        transactionId: 'pay-1',
        type: 'PAYMENT',
        result: 'SUCCESS',
        amount,
        currency,
      });
      return orderId;
    },
    rows,
    report({ from, to, currency } = {}) {
      const lines = [MPGS_REPORT_HEADER];
      for (const r of rows()) {
        if ((from !== undefined && r.at < from) || (to !== undefined && r.at >= to)) continue;
        if (currency && r.currency !== currency) continue;
        lines.push(
          [
            r.orderId,
            r.transactionId,
            r.type,
            r.result,
            minorToDecimal(r.amount, r.currency, true),
            r.currency,
            new Date(r.at).toISOString(),
          ]
            .map(field)
            .join(','),
        );
      }
      // the export ends every row with a line break: a file without the last one is cut (the parser refuses it)
      return `${lines.join('\n')}\n`;
    },
  };
}
