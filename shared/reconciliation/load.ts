import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Db } from '../db/knex';
import { businessDay } from './days';
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

const BATCH = 500;

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
      let batch: Record<string, unknown>[] = [];
      const flush = async () => {
        if (!batch.length) return;
        const rows = await trx('statement_lines')
          .insert(batch)
          .onConflict(['connector', 'kind', 'line_key'])
          .ignore()
          .returning('id');
        inserted += rows.length;
        batch = [];
      };
      for await (const l of report.lines) {
        lines++;
        if (!first || l.occurredAt < first) first = l.occurredAt;
        if (!last || l.occurredAt > last) last = l.occurredAt;
        batch.push({
          statement_id: id,
          connector: req.connector,
          line_no: l.lineNo,
          raw: JSON.stringify(l.raw),
          our_id: l.ourId,
          provider_ref: l.providerRef,
          kind: l.kind,
          status: l.status,
          amount: l.amount,
          currency: l.currency,
          fee: l.fee,
          occurred_at: l.occurredAt,
          business_day: businessDay(l.occurredAt.getTime(), req.timeZone),
          line_key: lineKey(l),
        });
        if (batch.length >= BATCH) await flush();
      }
      await flush();
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
