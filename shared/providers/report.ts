import type { Readable } from 'node:stream';

/**
 * What every connector's statement comes down to (docs/reconciliation.md): each line as the
 * provider wrote it (`raw`) and the fields the matching reads. A connector that publishes a report
 * adds one `ReportParser`; the storage, the matching and the ledger do not change.
 */

export type LineKind = 'collection' | 'payout' | 'refund' | 'reversal' | 'fee' | 'other';
export type LineStatus = 'completed' | 'failed' | 'pending';

export const CATEGORIES = [
  'matched',
  'amount-mismatch',
  'status-mismatch',
  'missing-here',
  'missing-there',
  'reversed',
] as const;
export type Category = (typeof CATEGORIES)[number];

export interface StatementLineIn {
  /** 1-based line of the file (the header is line 1) */
  lineNo: number;
  raw: Record<string, string>;
  /** our operation's id when the provider carries it (pawaPay's depositId → pay_<uuid>) */
  ourId: string | null;
  providerRef: string | null;
  kind: LineKind;
  status: LineStatus;
  /** minor units, never negative: the direction is the kind's */
  amount: number;
  currency: string;
  /** what the provider took for it, minor units */
  fee: number;
  occurredAt: Date;
}

/** What a report says of itself besides its lines (read once every line was read). */
export interface ReportSummary {
  periodStart: Date | null;
  periodEnd: Date | null;
  currency: string | null;
  closingBalance: number | null;
}

/** A parser reads a stream and yields lines; its summary is complete once the lines are all read. */
export interface ParsedReport {
  lines: AsyncIterable<StatementLineIn>;
  summary(): ReportSummary;
}

export interface ReportParser {
  connector: string;
  /** the `format` an upload names (`pawapay-csv`, `airtel-csv`) */
  format: string;
  parse(input: Readable): ParsedReport;
}

/** A report that cannot be read as its format says: 400 validation-failed naming the line. */
export class ReportError extends Error {
  constructor(
    readonly lineNo: number | null,
    message: string,
  ) {
    super(lineNo === null ? message : `line ${lineNo}: ${message}`);
  }
}
