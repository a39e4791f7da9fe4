import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Db } from '../db/knex';
import { businessDay } from './days';
import { runSql } from '../db/sql/run';
import { INSERT_LINES } from '../db/sql/reconciliation';
import { ReportError, type ReportParser, type StatementLineIn } from '../providers/report';

/**
 * Loads one statement into `provider_statements` and `statement_lines`, in one transaction
 * (docs/reconciliation.md#loading): a report that fails half-way leaves nothing. Lines go in
 * batches as the parser yields them; the file is never held whole. A statement already loaded
 * (the same pawaPay statementId, or an upload with the same bytes) changes nothing, and a line
 * already known from an overlapping statement is kept as it was.
 */

export class ReportTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the report is larger than ${limit} bytes`);
  }
}

export interface LoadRequest {
  connector: string;
  source: 'api' | 'upload';
  format: string;
  /** pawaPay's statementId; null: the SHA-256 of the bytes (an upload) */
  providerStatementId: string | null;
  periodStart?: Date;
  periodEnd?: Date;
  timeZone: string;
  maxBytes: number;
}

export interface LoadResult {
  id: string;
  duplicate: boolean;
  lines: number;
  inserted: number;
}

/** Lines per INSERT: large enough that a round trip is not the cost, small enough to hold. */
const BATCH = 1000;

/** A batch of lines as the columns of INSERT_LINES, filled line by line. */
class LineColumns {
  private readonly lineNo: number[] = [];
  private readonly raw: string[] = [];
  private readonly ourId: (string | null)[] = [];
  private readonly providerRef: (string | null)[] = [];
  private readonly kind: string[] = [];
  private readonly status: string[] = [];
  private readonly amount: number[] = [];
  private readonly currency: string[] = [];
  private readonly fee: number[] = [];
  private readonly occurredAt: string[] = [];
  private readonly day: string[] = [];
  private readonly key: string[] = [];

  get size(): number {
    return this.lineNo.length;
  }

  push(l: StatementLineIn, day: string, key: string): void {
    this.lineNo.push(l.lineNo);
    this.raw.push(JSON.stringify(l.raw));
    this.ourId.push(l.ourId);
    this.providerRef.push(l.providerRef);
    this.kind.push(l.kind);
    this.status.push(l.status);
    this.amount.push(l.amount);
    this.currency.push(l.currency);
    this.fee.push(l.fee);
    this.occurredAt.push(l.occurredAt.toISOString());
    this.day.push(day);
    this.key.push(key);
  }

  values(): unknown[] {
    return [
      this.lineNo,
      this.raw,
      this.ourId,
      this.providerRef,
      this.kind,
      this.status,
      this.amount,
      this.currency,
      this.fee,
      this.occurredAt,
      this.day,
      this.key,
    ];
  }
}

/** Counts and hashes the bytes on their way; past `maxBytes` it fails the stream. */
function meter(maxBytes: number) {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new ReportTooLarge(maxBytes));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { stream, digest: () => hash.digest('hex'), bytes: () => bytes };
}

const lineKey = (l: StatementLineIn) =>
  l.ourId ?? l.providerRef ?? `raw:${createHash('sha256').update(JSON.stringify(l.raw)).digest('hex')}`;

export async function loadStatement(
  db: Db,
  req: LoadRequest,
  input: Readable,
  parser: ReportParser,
): Promise<LoadResult> {
  if (req.providerStatementId) {
    const known = await db('provider_statements')
      .where({ connector: req.connector, provider_statement_id: req.providerStatementId, status: 'loaded' })
      .first('id', 'lines');
    if (known) return { id: known.id, duplicate: true, lines: known.lines, inserted: 0 };
  }
  const m = meter(req.maxBytes);
  input.on('error', (err) => m.stream.destroy(err));
  const report = parser.parse(input.pipe(m.stream));
  const id = `stm_${randomUUID()}`;
  try {
    return await db.transaction(async (trx) => {
      await trx('provider_statements').insert({
        id,
        connector: req.connector,
        source: req.source,
        format: req.format,
        provider_statement_id: req.providerStatementId ?? id,
        period_start: req.periodStart ?? new Date(0),
        period_end: req.periodEnd ?? new Date(0),
        status: 'loaded',
      });
      let lines = 0;
      let inserted = 0;
      let first: Date | null = null;
      let last: Date | null = null;
      // at most two batches at once: the one being written and the one being read; the parser
      // waits while a batch is written, and the stream behind it holds at most its buffer
      let batch = new LineColumns();
      const writing: { batch: Promise<void> | null } = { batch: null };
      const write = async (columns: LineColumns) => {
        const [r] = await runSql<{ n: number }>(trx, INSERT_LINES, [id, req.connector, ...columns.values()]);
        inserted += r.n;
      };
      const flush = async () => {
        if (writing.batch) await writing.batch;
        writing.batch = null;
        if (!batch.size) return;
        const full = batch;
        batch = new LineColumns();
        writing.batch = write(full);
        // a failure is awaited at the next flush; meanwhile it must not be unhandled
        writing.batch.catch(() => undefined);
      };
      try {
        for await (const l of report.lines) {
          lines++;
          if (!first || l.occurredAt < first) first = l.occurredAt;
          if (!last || l.occurredAt > last) last = l.occurredAt;
          batch.push(l, businessDay(l.occurredAt.getTime(), req.timeZone), lineKey(l));
          if (batch.size >= BATCH) await flush();
        }
        await flush();
        if (writing.batch) await writing.batch;
      } catch (err) {
        // the report failed half-way: the batch being written ends before the transaction rolls back
        await writing.batch?.catch(() => undefined);
        throw err;
      }
      const summary = report.summary();
      const providerStatementId = req.providerStatementId ?? m.digest();
      const duplicate = await trx('provider_statements')
        .where({ connector: req.connector, provider_statement_id: providerStatementId })
        .whereNot({ id })
        .first('id', 'lines');
      // the same bytes were loaded before: this transaction rolls back, the first load stands
      if (duplicate) throw new Duplicate({ id: duplicate.id, duplicate: true, lines: duplicate.lines, inserted: 0 });
      await trx('provider_statements')
        .where({ id })
        .update({
          provider_statement_id: providerStatementId,
          period_start: summary.periodStart ?? req.periodStart ?? first ?? new Date(0),
          period_end: summary.periodEnd ?? req.periodEnd ?? last ?? new Date(0),
          currency: summary.currency,
          closing_balance: summary.closingBalance,
          lines,
          loaded_at: new Date(),
        });
      return { id, duplicate: false, lines, inserted };
    });
  } catch (err) {
    if (err instanceof Duplicate) return err.result;
    // the parser may have stopped reading: let the rest of the body go
    input.resume();
    throw err;
  }
}

class Duplicate extends Error {
  constructor(readonly result: LoadResult) {
    super('duplicate statement');
  }
}

export { ReportError };
