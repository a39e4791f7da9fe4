import type { Knex } from 'knex';
import type { Model, QueryBuilder } from 'objection';
import { UUID_V4_RE } from '../ids';
import { ValidationFailed } from '../errors';

/**
 * Cursor pagination of docs/decisions.md#cursor, newest first: `next_cursor` is `<created>.<id>` of the
 * last item of the page, the Unix timestamp first; ties on `created` are broken by id, so no
 * item is skipped or repeated when many share one second. A bare Unix timestamp is accepted
 * too and starts strictly before that second. Written for any table with `created` (Unix
 * seconds) and `id` columns, so every list of the API can page the same way.
 */

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** The `limit` and `cursor` query parameters of every list, as text (their range is checked by parseLimit / parseCursor). */
export const LIMIT_QUERY = {
  type: 'string',
  pattern: '^[0-9]{1,3}$',
  description: 'Page size, 1 to 100 (default 20)',
} as const;
export const CURSOR_QUERY = {
  type: 'string',
  maxLength: 200,
  description: 'The `next_cursor` of the previous page',
} as const;

export interface Cursor {
  created: number;
  id: string | null;
}

export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT))
    throw new ValidationFailed('limit', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

/** A cursor whose id is `idPrefix` and a UUID v4. */
export function parseCursor(raw: string | undefined, idPrefix: string): Cursor | null {
  return cursorOf(raw, (id) => id.startsWith(idPrefix) && UUID_V4_RE.test(id.slice(idPrefix.length)));
}

/** `<created>` or `<created>.<id>`, with an id `validId` accepts; 400 otherwise. */
export function cursorOf(raw: string | undefined, validId: (id: string) => boolean): Cursor | null {
  if (raw === undefined) return null;
  const m = /^([0-9]{1,12})(?:\.(.+))?$/.exec(raw);
  if (!m || (m[2] !== undefined && !validId(m[2])))
    throw new ValidationFailed('cursor', 'cursor must be the next_cursor of a previous page');
  return { created: Number(m[1]), id: m[2] ?? null };
}

/** What pageQuery needs of a query: a knex builder or an objection model's query. */
type PageableQuery = Knex.QueryBuilder | QueryBuilder<Model, Model[]>;

/** Restricts a query to the items after the cursor and orders it newest first, one more than a page. */
export function pageQuery<Q extends PageableQuery>(query: Q, cursor: Cursor | null, limit: number): Q {
  // both builders take these calls alike; their types do not unify
  const q = query as Knex.QueryBuilder;
  if (cursor?.id) q.whereRaw('(created, id) < (?, ?)', [cursor.created, cursor.id]);
  else if (cursor) q.where('created', '<', cursor.created);
  q.orderBy([
    { column: 'created', order: 'desc' },
    { column: 'id', order: 'desc' },
  ]).limit(limit + 1);
  return query;
}

/** Cuts the extra row off and says whether there is more. */
export function toPage<T extends { created: number; id: string }, V>(rows: T[], limit: number, view: (row: T) => V) {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return {
    object: 'list' as const,
    data: items.map(view),
    has_more: hasMore,
    next_cursor: hasMore ? `${last.created}.${last.id}` : null,
  };
}
