import type { Db, Executor } from '../db/knex';
import { OperatorClosure } from '../db/models';
import { Unprocessable } from '../errors';
import type { Direction, Operator } from '../vocabulary';
import type { Caches } from '../ttlCache';

/**
 * Closures the service operator sets (PUT /admin/operators/{operator}), e.g. during a provider's
 * maintenance: while an operator's direction is closed, creations for it are refused with 422
 * `operator-unavailable` instead of a push that cannot succeed. Closures hold in both
 * environments. Creations read them from a per-process copy at most CACHE_MS old (the context's
 * caches); the process that set them sees the change at once.
 */

const CACHE_MS = 1000;
const cacheOf = (caches: Caches) => caches.ttl<Set<string>>('operator-closures', CACHE_MS, 1);

const keyOf = (operator: string, direction: Direction) => `${operator}/${direction}`;

export type ClosureDeps = { db: Executor; caches: Caches };

export async function loadClosures(db: Executor): Promise<Set<string>> {
  const rows = await OperatorClosure.query(db).select('operator', 'direction');
  return new Set(rows.map((r) => keyOf(r.operator, r.direction)));
}

/** The closed operator directions, as this process knows them (at most CACHE_MS old). */
export function closures(deps: ClosureDeps): Promise<Set<string>> {
  return cacheOf(deps.caches).get('all', () => loadClosures(deps.db));
}

/** 422 `operator-unavailable` when the operator's direction is in `closed` (from `closures`). */
export function refuseClosed(closed: Set<string>, operator: Operator, direction: Direction): void {
  if (closed.has(keyOf(operator, direction))) {
    throw new Unprocessable(
      'operator-unavailable',
      `${operator} is closed for ${direction}s for now (GET /v1/availability shows when it opens again)`,
      'operator',
    );
  }
}

export async function refuseIfClosed(deps: ClosureDeps, operator: Operator, direction: Direction): Promise<void> {
  refuseClosed(await closures(deps), operator, direction);
}

/** Closes (`closed`) or opens (`operational`) some directions of an operator. */
export async function setClosures(
  { db, caches }: { db: Db; caches: Caches },
  operator: Operator,
  change: Partial<Record<Direction, 'closed' | 'operational'>>,
): Promise<void> {
  await db.transaction(async (trx) => {
    for (const [direction, state] of Object.entries(change) as [Direction, 'closed' | 'operational'][]) {
      if (state === 'closed')
        await OperatorClosure.query(trx).insert({ operator, direction }).onConflict(['operator', 'direction']).ignore();
      else await OperatorClosure.query(trx).findById([operator, direction]).delete();
    }
  });
  const closed = loadClosures(db);
  cacheOf(caches).set('all', closed);
  await closed;
}
