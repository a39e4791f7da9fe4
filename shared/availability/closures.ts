import type { Db, Executor } from '../db/knex';
import { OperatorClosure } from '../db/models';
import { Unprocessable } from '../errors';
import type { Operator } from '../vocabulary';
import type { Direction } from '../vocabulary';

/**
 * Closures the service operator sets (PUT /admin/operators/{operator}), e.g. during a provider's
 * maintenance: while an operator's direction is closed, creations for it are refused with 422
 * `operator-unavailable` instead of a push that cannot succeed. Closures hold in both
 * environments. Creations read them from a per-process copy at most CACHE_MS old; the process
 * that set them sees the change at once.
 */

const CACHE_MS = 1000;
let cached: { at: number; closed: Promise<Set<string>> } | undefined;

const keyOf = (operator: string, direction: Direction) => `${operator}/${direction}`;

export async function loadClosures(db: Executor): Promise<Set<string>> {
  const rows = await OperatorClosure.query(db).select('operator', 'direction');
  return new Set(rows.map((r) => keyOf(r.operator, r.direction)));
}

/** The closed operator directions, as this process knows them (at most CACHE_MS old). */
export function closures(db: Executor): Promise<Set<string>> {
  if (!cached || Date.now() - cached.at > CACHE_MS) {
    const closed = loadClosures(db);
    const entry = { at: Date.now(), closed };
    cached = entry;
    closed.catch(() => {
      if (cached === entry) cached = undefined;
    });
  }
  return cached.closed;
}

/** 422 `operator-unavailable` when the operator's direction is in `closed` (from `closures`). */
export function refuseClosed(closed: Set<string>, operator: Operator, direction: Direction): void {
  if (closed.has(keyOf(operator, direction))) {
    throw new Unprocessable('operator-unavailable', `${operator} is closed for ${direction}s for now (GET /v1/availability shows when it opens again)`, 'operator');
  }
}

/** 422 `operator-unavailable` while the operator's direction is closed. */
export async function refuseIfClosed(db: Executor, operator: Operator, direction: Direction): Promise<void> {
  refuseClosed(await closures(db), operator, direction);
}

/** Closes (`closed`) or opens (`operational`) some directions of an operator. */
export async function setClosures(db: Db, operator: Operator, change: Partial<Record<Direction, 'closed' | 'operational'>>): Promise<void> {
  await db.transaction(async (trx) => {
    for (const [direction, state] of Object.entries(change) as [Direction, 'closed' | 'operational'][]) {
      if (state === 'closed') await OperatorClosure.query(trx).insert({ operator, direction }).onConflict(['operator', 'direction']).ignore();
      else await OperatorClosure.query(trx).findById([operator, direction]).delete();
    }
  });
  const closed = loadClosures(db);
  cached = { at: Date.now(), closed };
  await closed;
}
