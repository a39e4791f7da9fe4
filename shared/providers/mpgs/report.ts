import { Transform, type Readable } from 'node:stream';
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

/**
 * The Mastercard Gateway's transaction report: the CSV an operator downloads from Merchant
 * Administration (a transaction search, "Download CSV") or from the Reporting API with the same
 * fields, uploaded as POST /admin/reconciliation/statements?connector=mpgs. Columns are found by
 * name, as Merchant Administration titles them or as the API's field names
 * (./README.md#transaction-report-reconciliation):
 *
 *   Order ID,Transaction ID,Transaction Type,Result,Amount,Currency,Date
 *
 * The gateway writes no trailer, so a file cut at a row boundary is told only by its missing final
 * line break; a file cut inside a row has fewer fields than its header. Both are refused.
 */

/** Our column → the header names accepted for it (compared by `headerKey`). */
const COLUMNS = {
  orderid: ['Order ID', 'order.id', 'Order Reference'],
  transactionid: ['Transaction ID', 'transaction.id'],
  type: ['Transaction Type', 'transaction.type', 'Type'],
  result: ['Result', 'result', 'Transaction Result'],
  amount: ['Amount', 'transaction.amount', 'Transaction Amount'],
  currency: ['Currency', 'transaction.currency', 'Transaction Currency'],
  date: ['Date', 'timeOfRecord', 'Transaction Date', 'Date Created', 'transaction.acquirer.date'],
} as const;
type Column = keyof typeof COLUMNS;

/** Transaction types that move money; the others (AUTHENTICATION, VERIFICATION, …) are skipped. */
const TYPES: Record<string, LineKind> = {
  PAYMENT: 'collection',
  PURCHASE: 'collection',
  CAPTURE: 'collection',
  REFUND: 'refund',
  VOID_PAYMENT: 'reversal',
  VOID_CAPTURE: 'reversal',
  CHARGEBACK: 'reversal',
};
/** Types the report lists that move no money: read, checked, not stored. */
const SKIPPED = new Set([
  'AUTHENTICATION',
  'AUTHORIZATION',
  'AUTHORIZATION_UPDATE',
  'VERIFICATION',
  'VOID_AUTHORIZATION',
  'VOID_REFUND',
  'REFUND_REQUEST',
]);
const RESULTS: Record<string, LineStatus> = {
  SUCCESS: 'completed',
  FAILURE: 'failed',
  PENDING: 'pending',
  UNKNOWN: 'pending',
  ERROR: 'failed',
};

function amount(text: string, currency: Currency, lineNo: number): number {
  const t = text.trim();
  const negative = t.startsWith('-');
  const minor = decimalToMinor(negative ? t.slice(1) : t, currency);
  if (minor === undefined) throw new ReportError(lineNo, `amount "${text}" is not a ${currency} amount`);
  return minor;
}

/** ISO 8601 as the API writes it (`2026-11-27T13:03:22.000Z`), or `YYYY-MM-DD HH:MM:SS` in UTC. */
function date(text: string, lineNo: number): Date {
  const t = text.trim().replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d{2}:?\d{2}$/.test(t) ? t : `${t}Z`);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(t) || Number.isNaN(ms))
    throw new ReportError(lineNo, `"${text}" is not a date and time`);
  return new Date(ms);
}

export const mpgsReportParser: ReportParser = {
  connector: 'mpgs',
  format: 'mpgs-csv',
  parse(input: Readable): ParsedReport {
    const summary: ReportSummary = { periodStart: null, periodEnd: null, currency: null, closingBalance: null };
    let lastByte = -1;
    const watched = input.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          if (chunk.length) lastByte = chunk[chunk.length - 1];
          done(null, chunk);
        },
      }),
    );
    input.on('error', (e) => watched.destroy(e));
    async function* lines(): AsyncGenerator<StatementLineIn> {
      let header: string[] | null = null;
      const index = {} as Record<Column, number>;
      for await (const { lineNo, fields } of csvRows(watched)) {
        if (!header) {
          header = fields;
          const keys = fields.map(headerKey);
          const missing: string[] = [];
          for (const [c, names] of Object.entries(COLUMNS) as [Column, readonly string[]][]) {
            index[c] = keys.findIndex((k) => names.some((n) => headerKey(n) === k));
            if (index[c] < 0) missing.push(names[0]);
          }
          if (missing.length) throw new ReportError(lineNo, `the header lacks the column(s) ${missing.join(', ')}`);
          continue;
        }
        if (fields.length !== header.length)
          throw new ReportError(lineNo, `${fields.length} fields where the header has ${header.length} (truncated?)`);
        const get = (c: Column) => fields[index[c]].trim();
        const type = get('type').toUpperCase();
        const kind = TYPES[type];
        if (!kind) {
          if (SKIPPED.has(type)) continue;
          throw new ReportError(lineNo, `transaction type "${get('type')}" is not one the gateway reports`);
        }
        const status = RESULTS[get('result').toUpperCase()];
        if (!status)
          throw new ReportError(lineNo, `result "${get('result')}" is not one of ${Object.keys(RESULTS).join(', ')}`);
        const currency = get('currency').toUpperCase();
        if (!(CURRENCIES as readonly string[]).includes(currency))
          throw new ReportError(lineNo, `currency "${currency}" is not one of ${CURRENCIES.join(', ')}`);
        const orderId = get('orderid');
        const transactionId = get('transactionid');
        if (!orderId || !transactionId) throw new ReportError(lineNo, 'a row without its order or transaction id');
        // the order is our payment (shared/providers/mpgs/wire.ts orderIdOf); a refund's transaction
        // id is our refund's id; a reversal names the order it reverses
        const ourId = kind === 'refund' ? (/^re_/.test(transactionId) ? transactionId : null) : orderId;
        yield {
          lineNo,
          raw: Object.fromEntries(header.map((h, i) => [h, fields[i]])),
          ourId: ourId && /^(pay|re)_/.test(ourId) ? ourId : null,
          providerRef: kind === 'refund' ? `${orderId}/${transactionId}` : orderId,
          kind,
          status,
          amount: amount(get('amount'), currency as Currency, lineNo),
          currency,
          // the gateway's report carries no acquirer fee: the fee comes with the acquirer's settlement
          fee: 0,
          occurredAt: date(get('date'), lineNo),
        };
        summary.currency ??= currency;
      }
      if (!header) throw new ReportError(null, 'the file is empty');
      if (lastByte !== 0x0a && lastByte !== 0x0d)
        throw new ReportError(null, 'the file does not end with a line break (truncated)');
    }
    return { lines: lines(), summary: () => summary };
  },
};
