import { Readable } from 'node:stream';
import type { Db, Executor } from '../db/knex';
import { runSql, streamSql } from '../db/sql/run';
import { ITEM_ONE, ITEMS_ALL, ITEMS_PAGE, OPEN_ITEMS, RESOLVE_ITEM } from '../db/sql/reconciliation';
import { csvField } from '../statements/csv';
import { NotFound, ValidationFailed } from '../errors';
import { parseLimit } from '../db/pagination';
import { REVIEW_MS } from '../operations/attention';
import { CATEGORIES, type Category } from '../providers/report';

/** What the operator reads (docs/reconciliation.md#seeing-it): runs, their items, what is still open. */

export function runView(r: Record<string, any>) {
  return {
    object: 'reconciliation',
    id: r.id,
    connector: r.connector,
    business_day: typeof r.business_day === 'string' ? r.business_day : r.business_day_text,
    status: r.status,
    counts: r.counts,
    provider_fees: r.provider_fees,
    balances: r.balances,
    balance_flagged: r.balance_flagged,
    started_at: r.started_at ? Math.floor(new Date(r.started_at).getTime() / 1000) : null,
    finished_at: r.finished_at ? Math.floor(new Date(r.finished_at).getTime() / 1000) : null,
  };
}

const RUN_COLUMNS = [
  'id',
  'connector',
  'status',
  'counts',
  'provider_fees',
  'balances',
  'balance_flagged',
  'started_at',
  'finished_at',
];

export async function listRuns(db: Executor, query: { connector?: string; limit?: string }) {
  const limit = parseLimit(query.limit);
  const q = db('reconciliation_runs')
    .select(...RUN_COLUMNS, db.raw(`business_day::text as business_day`))
    .orderBy([
      { column: 'business_day', order: 'desc' },
      { column: 'connector', order: 'asc' },
    ])
    .limit(limit);
  if (query.connector) q.where({ connector: query.connector });
  return { object: 'list', data: (await q).map(runView) };
}

export async function getRun(db: Executor, id: string) {
  const r = await db('reconciliation_runs')
    .where({ id })
    .first(...RUN_COLUMNS, db.raw(`business_day::text as business_day`));
  if (!r) throw new NotFound('Reconciliation');
  return runView(r);
}

export function parseCategory(raw: string | undefined): Category | null {
  if (raw === undefined || raw === '') return null;
  if (!(CATEGORIES as readonly string[]).includes(raw))
    throw new ValidationFailed('category', `category must be one of: ${CATEGORIES.join(', ')}`);
  return raw as Category;
}

/** One page of a run's items, by item id (`starting_after`: the last id of the previous page). */
export async function listItems(
  db: Executor,
  runId: string,
  query: { category?: string; limit?: string; starting_after?: string },
) {
  await getRun(db, runId);
  const category = parseCategory(query.category);
  const limit = parseLimit(query.limit);
  const after = query.starting_after === undefined ? 0 : Number(query.starting_after);
  if (!Number.isSafeInteger(after) || after < 0)
    throw new ValidationFailed('starting_after', 'starting_after must be an item id');
  const rows = await runSql<Record<string, any>>(db, ITEMS_PAGE, [runId, after, category, limit + 1]);
  const data = rows.slice(0, limit).map(itemView);
  return { object: 'list', data, has_more: rows.length > limit };
}

function itemView(r: Record<string, any>) {
  return {
    object: 'reconciliation_item',
    id: Number(r.id),
    category: r.category,
    object_kind: r.object_kind,
    object_id: r.object_id,
    resolved: r.resolved_at !== null,
    resolved_at: r.resolved_at ? Math.floor(new Date(r.resolved_at).getTime() / 1000) : null,
    resolution_note: r.resolution_note ?? null,
    ours: r.details.ours ?? null,
    theirs: r.details.theirs ?? null,
    line: r.line ?? null,
    details: r.details,
  };
}

/** The largest note an operator may write on an item. */
export const MAX_NOTE_CHARS = 2000;

/**
 * An operator resolves a mismatch with a note (docs/reconciliation.md#resolving-an-item): it
 * leaves GET /admin/attention and `reconciliation_items`' count. Once: resolving it again answers
 * the item as it is, the first note kept. A matched item needs nothing: 400.
 */
export async function resolveItem(db: Executor, rawId: string, note: string, now: number) {
  const id = /^\d{1,18}$/.test(rawId) ? rawId : null;
  if (!id) throw new NotFound('Reconciliation item');
  const [before] = await runSql<Record<string, any>>(db, ITEM_ONE, [id]);
  if (!before) throw new NotFound('Reconciliation item');
  if (before.category === 'matched') throw new ValidationFailed('id', 'a matched item needs no resolution');
  await runSql(db, RESOLVE_ITEM, [id, note, new Date(now)]);
  const [after] = await runSql<Record<string, any>>(db, ITEM_ONE, [id]);
  return { ...itemView(after), reconciliation: after.run_id as string };
}

export const ITEM_CSV_COLUMNS = ['id', 'category', 'object_kind', 'object_id', 'line_id', 'resolved', 'details'];

/** Every item of a run as CSV, through a cursor: as many items as the day has, in flat memory. */
export function itemsCsv(db: Db, runId: string, category: Category | null): Readable {
  async function* lines() {
    yield `${ITEM_CSV_COLUMNS.join(',')}\n`;
    let batch = '';
    let n = 0;
    for await (const r of streamSql<Record<string, any>>(db, ITEMS_ALL, [runId, category], 1000)) {
      batch += `${ITEM_CSV_COLUMNS.map((c) => csvField(r[c] === null || r[c] === undefined ? null : String(r[c]))).join(',')}\n`;
      if (++n % 200 === 0) {
        yield batch;
        batch = '';
      }
    }
    if (batch) yield batch;
  }
  return Readable.from(lines(), { objectMode: false });
}

/** The mismatches still open, for GET /admin/attention: the provider's line beside our row. */
export async function reconciliationAttention(db: Executor, now: number, limit = 500) {
  const rows = await runSql<Record<string, any>>(db, OPEN_ITEMS, [new Date(now - REVIEW_MS), limit]);
  return rows.map((r) => ({
    reason: `reconciliation-${r.category}`,
    object: r.object_kind,
    id: r.object_id,
    connector: r.connector,
    business_day: r.business_day,
    reconciliation: r.run_id,
    item: Number(r.id),
    ours: r.details.ours ?? null,
    theirs: r.details.theirs ?? null,
    line: r.line ?? null,
  }));
}
