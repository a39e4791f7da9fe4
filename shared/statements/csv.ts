import { Readable } from 'node:stream';
import type { Caller } from '../caller';
import type { Executor } from '../db/knex';
import { ValidationFailed } from '../errors';
import { transactionLines, type StatementLine } from '../db/sql/statements';

/**
 * GET /v1/reports/transactions.csv?from=&to= (docs/decisions.md#integrators-kit): the merchant's
 * ledger lines of the key's environment created in [from, to) (Unix seconds, at most 31 days),
 * oldest first, as CSV. The rows come through a Postgres cursor (pg-query-stream, 1,000 rows a
 * fetch) and leave as they come, with backpressure: memory stays flat whatever the number of
 * lines. A client that goes away stops the query and gives the connection back.
 */

export const CSV_COLUMNS = [
  'created',
  'type',
  'id',
  'source_id',
  'reference',
  'currency',
  'amount',
  'fee',
  'net',
  'status',
] as const;
export const MAX_REPORT_SECONDS = 31 * 24 * 3600;
const FETCH_ROWS = 1000;

function unixParam(name: string, raw: unknown): number {
  if (raw === undefined) throw new ValidationFailed(name, `${name} is required (Unix seconds)`);
  if (typeof raw !== 'string' || !/^[0-9]{1,11}$/.test(raw))
    throw new ValidationFailed(name, `${name} must be an integer number of Unix seconds`);
  return Number(raw);
}

/** from and to: integers, to after from, at most 31 days apart; no other query field. */
export function parseReportRange(query: Record<string, unknown>) {
  const unknown = Object.keys(query).find((k) => k !== 'from' && k !== 'to');
  if (unknown !== undefined) throw new ValidationFailed(unknown, `${unknown} is not a known query parameter`);
  const from = unixParam('from', query.from);
  const to = unixParam('to', query.to);
  if (to <= from) throw new ValidationFailed('to', 'to must be after from');
  if (to - from > MAX_REPORT_SECONDS)
    throw new ValidationFailed('to', `to must be at most 31 days (${MAX_REPORT_SECONDS} s) after from`);
  return { from, to };
}

type ReportRange = ReturnType<typeof parseReportRange>;

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. A text field that
 * a spreadsheet would read as a formula (=, +, -, @ first) gets a leading apostrophe; numbers are
 * written as they are.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvLine(l: StatementLine): string {
  return `${CSV_COLUMNS.map((c) => csvField(l[c])).join(',')}\n`;
}

async function* lines(db: Executor, caller: Caller, range: ReportRange): AsyncGenerator<string> {
  yield `${CSV_COLUMNS.join(',')}\n`;
  // stopped early (client gone) or failed, the cursor is closed and its connection goes back to the pool (streamSql)
  let batch = '';
  let n = 0;
  for await (const row of transactionLines(
    db,
    caller.merchantId,
    caller.environment,
    range.from,
    range.to,
    FETCH_ROWS,
  )) {
    batch += csvLine(row);
    // a few hundred lines per chunk: fewer, larger writes
    if (++n % 200 === 0) {
      yield batch;
      batch = '';
    }
  }
  if (batch) yield batch;
}

/** The CSV body, as a stream. */
export function transactionsCsv(db: Executor, caller: Caller, range: ReportRange): Readable {
  return Readable.from(lines(db, caller, range), { objectMode: false, highWaterMark: 64 * 1024 });
}
