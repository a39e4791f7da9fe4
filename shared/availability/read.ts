import type { AvailabilityConfig } from '../config';
import { raw } from 'objection';
import type { Executor } from '../db/knex';
import { ProviderHealthBucket } from '../db/models';
import { DIRECTIONS, OPERATORS, type Direction, type Environment, type Operator } from '../vocabulary';
import { loadClosures } from './closures';
import type { ProviderRegistry } from '../providers/registry';
import type { Connector, ProviderAvailability } from '../providers/connector';

/**
 * Operator availability (GET /v1/availability, docs/decisions.md#integrators-kit): per operator
 * and direction, `closed` while the operator has closed it or no connector serves it (live keys
 * without a route: docs/decisions.md#live-providers), or the connector's provider says it is closed;
 * else `delayed` when the provider says so, or when the provider calls of the last window in this
 * environment went badly (AvailabilityConfig: at least minCalls calls, half or more failed or
 * slow); else `operational`. `delayed` never refuses, and neither does the provider's `closed`
 * (the creation is 201, then failed `operator-unavailable` when the provider refuses it); the
 * operator's closures and a missing route refuse with 422 (shared/availability/closures.ts).
 */

/** How long the provider's own word may take before the answer goes without it (its connector caches it). */
const PROVIDER_WORD_MS = 500;

/** What each routed connector says of the directions it serves, by operator/direction; nothing when it is slow or fails. */
async function providersWord(
  providers: Pick<ProviderRegistry, 'route'>,
  environment: Environment,
  operators: Operator[],
): Promise<Map<string, AvailabilityStatus>> {
  const word = new Map<string, AvailabilityStatus>();
  const asked = new Map<Connector, Promise<ProviderAvailability>>();
  for (const operator of operators) {
    for (const direction of DIRECTIONS) {
      const c = providers.route(environment, operator, direction);
      if (c?.availability && !asked.has(c)) {
        const timeout = new Promise<ProviderAvailability>((resolve) =>
          setTimeout(() => resolve({}), PROVIDER_WORD_MS).unref(),
        );
        asked.set(c, Promise.race([c.availability().catch(() => ({})), timeout]));
      }
    }
  }
  for (const [c, said] of asked) {
    const by = await said;
    for (const operator of operators) {
      for (const direction of DIRECTIONS) {
        const status = by[operator]?.[direction];
        if (status && providers.route(environment, operator, direction) === c)
          word.set(`${operator}/${direction}`, status);
      }
    }
  }
  return word;
}

export type AvailabilityStatus = 'operational' | 'delayed' | 'closed';

/**
 * Card payments in an environment (GET /v1/availability `card`): `closed` while no card connector
 * serves it (live keys without LIVE_CARD: creations get 422 method-unavailable), else `operational`.
 */
export function cardAvailability(
  providers: Pick<ProviderRegistry, 'cardRoute'>,
  environment: Environment,
): { collection: 'operational' | 'closed' } {
  return { collection: providers.cardRoute(environment) ? 'operational' : 'closed' };
}
export type AvailabilityRow = { operator: Operator } & Record<Direction, AvailabilityStatus>;

type Recent = { operator: string; direction: Direction; calls: number; bad: number };

export function isDelayed(r: { calls: number; bad: number } | undefined, minCalls: number): boolean {
  return r !== undefined && r.calls >= minCalls && r.bad * 2 >= r.calls;
}

export async function operatorAvailability(
  db: Executor,
  providers: Pick<ProviderRegistry, 'route'>,
  environment: Environment,
  now: number,
  config: AvailabilityConfig,
  only?: Operator,
): Promise<AvailabilityRow[]> {
  const operators = only ? [only] : OPERATORS;
  const [closed, word, recent] = await Promise.all([
    loadClosures(db),
    providersWord(providers, environment, operators),
    ProviderHealthBucket.query(db)
      .where({ environment })
      .where('bucket', '>', new Date(now - config.windowMs))
      .where('bucket', '<=', new Date(now))
      .groupBy('operator', 'direction')
      .select(
        'operator',
        'direction',
        raw('sum(calls)::int as calls'),
        raw('sum(failures + slow)::int as bad'),
      ) as unknown as Promise<Recent[]>,
  ]);
  const byKey = new Map(recent.map((r) => [`${r.operator}/${r.direction}`, r]));
  return operators.map((operator) => {
    const row = { operator } as AvailabilityRow;
    for (const direction of DIRECTIONS) {
      const key = `${operator}/${direction}`;
      const said = word.get(key);
      if (closed.has(key) || !providers.route(environment, operator, direction) || said === 'closed')
        row[direction] = 'closed';
      else
        row[direction] = said === 'delayed' || isDelayed(byKey.get(key), config.minCalls) ? 'delayed' : 'operational';
    }
    return row;
  });
}
