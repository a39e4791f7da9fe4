import type { AvailabilityConfig } from '../config';
import { raw } from 'objection';
import type { Executor } from '../db/knex';
import { ProviderHealthBucket } from '../db/models';
import { DIRECTIONS, OPERATORS, type Direction, type Environment, type Operator } from '../vocabulary';
import { loadClosures } from './closures';

/**
 * Operator availability (GET /v1/availability, docs/decisions.md "Integrator's kit"): per operator
 * and direction, `closed` while the operator has closed it, else `delayed` when the provider
 * calls of the last window in this environment went badly (AvailabilityConfig: at least
 * minCalls calls, half or more failed or slow), else `operational`. `delayed` never refuses.
 */

export type AvailabilityStatus = 'operational' | 'delayed' | 'closed';
export type AvailabilityRow = { operator: Operator } & Record<Direction, AvailabilityStatus>;

type Recent = { operator: string; direction: Direction; calls: number; bad: number };

export function isDelayed(r: { calls: number; bad: number } | undefined, minCalls: number): boolean {
  return r !== undefined && r.calls >= minCalls && r.bad * 2 >= r.calls;
}

export async function operatorAvailability(db: Executor, environment: Environment, now: number, config: AvailabilityConfig, only?: Operator): Promise<AvailabilityRow[]> {
  const [closed, recent] = await Promise.all([
    loadClosures(db),
    ProviderHealthBucket.query(db)
      .where({ environment })
      .where('bucket', '>', new Date(now - config.windowMs))
      .where('bucket', '<=', new Date(now))
      .groupBy('operator', 'direction')
      .select('operator', 'direction', raw('sum(calls)::int as calls'), raw('sum(failures + slow)::int as bad')) as unknown as Promise<Recent[]>,
  ]);
  const byKey = new Map(recent.map((r) => [`${r.operator}/${r.direction}`, r]));
  return (only ? [only] : OPERATORS).map((operator) => {
    const row = { operator } as AvailabilityRow;
    for (const direction of DIRECTIONS) {
      const key = `${operator}/${direction}`;
      row[direction] = closed.has(key) ? 'closed' : isDelayed(byKey.get(key), config.minCalls) ? 'delayed' : 'operational';
    }
    return row;
  });
}
