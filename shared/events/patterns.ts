import { EVENT_TYPES, type EventType } from '../vocabulary';

/**
 * Event subscriptions: an endpoint lists glob patterns (`payment.*`, `refund.succeeded`, `*`),
 * where `*` stands for any run of characters. `webhook.test` is never subscribed to: the operator
 * sends it to one endpoint by name.
 */

export const SUBSCRIBABLE_EVENT_TYPES: readonly EventType[] = EVENT_TYPES.filter((t) => t !== 'webhook.test');

export const PATTERN_RE = /^[a-z*][a-z_.*]{0,99}$/;

export function patternMatches(pattern: string, type: string): boolean {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.]/g, '\\.'))
    .join('.*');
  return new RegExp(`^${body}$`).test(type);
}

export function subscribes(patterns: readonly string[], type: string): boolean {
  if (type === 'webhook.test') return false;
  return patterns.some((p) => patternMatches(p, type));
}

/** Why a pattern is refused, or null: a pattern must be well formed and match some event type. */
export function patternProblem(pattern: string): string | null {
  if (!PATTERN_RE.test(pattern)) return 'must be an event type or a glob pattern such as payment.*';
  if (!SUBSCRIBABLE_EVENT_TYPES.some((t) => patternMatches(pattern, t)))
    return `matches no event type (${SUBSCRIBABLE_EVENT_TYPES.join(', ')})`;
  return null;
}
