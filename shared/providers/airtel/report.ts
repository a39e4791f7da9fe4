import type { Readable } from 'node:stream';
import { decimalToMinor } from '../amounts';
import { CURRENCIES, type Currency } from '../../vocabulary';
import { csvRows, headerKey } from '../reportCsv';
import {
  ReportError,
  type LineKind,
  type LineStatus,
  type ParsedReport,
  type ReportParser,
  type ReportSummary,
  type StatementLineIn,
} from '../report';
import { fromAirtelId } from './wire';

/**
 * The Airtel Money transaction report an operator downloads from Airtel's partner portal and
 * uploads (POST /admin/reconciliation/statements?connector=airtel): Airtel publishes no statement
 * API and no report format, so the columns are ours, written in ./README.md#transaction-report-reconciliation:
 *
 *   Date,Transaction ID,Airtel Money ID,Type,Status,Amount,Currency,Fee,MSISDN
 *   ...one row per transaction...
 *   TOTAL,<rows>,<closing balance>,<currency>[,<period start>,<period end>]
 *
 * The TOTAL row is the last: a file without it, or whose row count differs, is truncated.
 */

const COLUMNS = ['date', 'transactionid', 'airtelmoneyid', 'type', 'status', 'amount', 'currency', 'fee'] as const;
const TYPES: Record<string, LineKind> = {
  COLLECTION: 'collection',
  DISBURSEMENT: 'payout',
  REFUND: 'refund',
  REVERSAL: 'reversal',
  FEE: 'fee',
};
/** The provider reference of our Airtel refunds: `refund-of:` and the collection's Airtel Money id (connector.ts). */
const REFUND_OF = 'refund-of:';
const STATUSES: Record<string, LineStatus> = { TS: 'completed', TF: 'failed', TIP: 'pending' };

function amount(text: string, currency: Currency, lineNo: number, what: string): number {
  const t = text.trim();
  const negative = t.startsWith('-');
  const minor = decimalToMinor(negative ? t.slice(1) : t, currency);
  if (minor === undefined) throw new ReportError(lineNo, `${what} "${text}" is not a ${currency} amount`);
  return negative ? -minor : minor;
}

/** "2026-11-27 14:03:22": Kinshasa time (UTC+01:00, no daylight saving) unless an offset is written. */
function date(text: string, lineNo: number): Date {
  const t = text.trim().replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d{2}:\d{2}$/.test(t) ? t : `${t}+01:00`);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(t) || Number.isNaN(ms))
    throw new ReportError(lineNo, `"${text}" is not a date and time`);
  return new Date(ms);
}

export const airtelReportParser: ReportParser = {
  connector: 'airtel',
  format: 'airtel-csv',
  parse(input: Readable): ParsedReport {
    const summary: ReportSummary = { periodStart: null, periodEnd: null, currency: null, closingBalance: null };
    async function* lines(): AsyncGenerator<StatementLineIn> {
      let header: string[] | null = null;
      let index: Record<string, number> = {};
      let rows = 0;
      let total: { lineNo: number } | null = null;
      for await (const { lineNo, fields } of csvRows(input)) {
        if (total) throw new ReportError(lineNo, 'rows after the TOTAL row');
        if (!header) {
          header = fields;
          const keys = fields.map(headerKey);
          index = Object.fromEntries(COLUMNS.map((c) => [c, keys.indexOf(c)]));
          const missing = COLUMNS.filter((c) => index[c] < 0);
          if (missing.length) throw new ReportError(lineNo, `the header lacks the column(s) ${missing.join(', ')}`);
          continue;
        }
        if (fields[0].trim().toUpperCase() === 'TOTAL') {
          const declared = Number(fields[1]);
          if (!Number.isInteger(declared) || declared !== rows)
            throw new ReportError(lineNo, `the TOTAL row counts ${fields[1]} rows, the file has ${rows} (truncated?)`);
          const currency = (fields[3] ?? '').trim();
          if (fields[2]?.trim()) {
            if (!(CURRENCIES as readonly string[]).includes(currency))
              throw new ReportError(lineNo, `the TOTAL row's currency "${currency}" is not one of ours`);
            summary.closingBalance = amount(fields[2], currency as Currency, lineNo, 'closing balance');
            summary.currency = currency;
          }
          // optional: the period the report covers, start and end (docs/reconciliation.md#statements)
          if (fields[4]?.trim() || fields[5]?.trim()) {
            summary.periodStart = date(fields[4] ?? '', lineNo);
            summary.periodEnd = date(fields[5] ?? '', lineNo);
            if (summary.periodEnd <= summary.periodStart)
              throw new ReportError(lineNo, "the TOTAL row's period ends before it starts");
          }
          total = { lineNo };
          continue;
        }
        if (fields.length !== header.length)
          throw new ReportError(lineNo, `${fields.length} fields where the header has ${header.length} (truncated?)`);
        rows++;
        const get = (c: (typeof COLUMNS)[number]) => fields[index[c]].trim();
        const currency = get('currency');
        if (!(CURRENCIES as readonly string[]).includes(currency))
          throw new ReportError(lineNo, `currency "${currency}" is not one of ${CURRENCIES.join(', ')}`);
        const kind = TYPES[get('type').toUpperCase()];
        if (!kind)
          throw new ReportError(lineNo, `type "${get('type')}" is not one of ${Object.keys(TYPES).join(', ')}`);
        const status = STATUSES[get('status').toUpperCase()];
        if (!status) throw new ReportError(lineNo, `status "${get('status')}" is not one of TS, TF, TIP`);
        const ours = fromAirtelId(get('transactionid'));
        const ref = get('airtelmoneyid');
        yield {
          lineNo,
          raw: Object.fromEntries(header.map((h, i) => [h, fields[i]])),
          ourId: ours?.id ?? null,
          // Airtel names a refund by the collection refunded (the connector's refund reference)
          providerRef: ref && kind === 'refund' && !ref.startsWith(REFUND_OF) ? `${REFUND_OF}${ref}` : ref || null,
          kind,
          status,
          amount: Math.abs(amount(get('amount'), currency as Currency, lineNo, 'amount')),
          currency,
          fee: get('fee') ? Math.abs(amount(get('fee'), currency as Currency, lineNo, 'fee')) : 0,
          occurredAt: date(get('date'), lineNo),
        };
        summary.currency ??= currency;
      }
      if (!header) throw new ReportError(null, 'the file is empty');
      if (!total) throw new ReportError(null, 'the file ends without its TOTAL row (truncated)');
    }
    return { lines: lines(), summary: () => summary };
  },
};
