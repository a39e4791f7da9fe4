/**
 * Delivery rules of docs/decisions.md#webhooks, as pure functions.
 *
 * Glossary. An *endpoint* (`wh_`) is a merchant URL subscribed to event patterns. A *delivery*
 * (`whd_`) is one event owed to one endpoint; its id is the X-Service-Delivery-Id of every
 * attempt. An *attempt* is one POST, numbered 1..8 within a *round* (a replay starts a new round).
 */

export const MAX_ATTEMPTS = 8;
/** Consecutive failed attempts on one endpoint that open its circuit breaker (docs/decisions.md#webhooks). */
export const BREAKER_THRESHOLD = 20;

export type AttemptVerdict = { status: 'succeeded' } | { status: 'pending'; retryInMs: number } | { status: 'dead' };

/** Any 2xx succeeds; everything else (3xx included: redirects are not followed) fails. */
export const isSuccess = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode < 300;

/** What follows attempt n (1..8): attempt n+1 after the n-th delay; dead after 8 (the last delay goes unused, docs/decisions.md#webhooks). */
export function afterAttempt(attempt: number, succeeded: boolean, delaysMs: readonly number[]): AttemptVerdict {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > MAX_ATTEMPTS)
    throw new RangeError(`attempt ${attempt} is outside 1..${MAX_ATTEMPTS}`);
  if (succeeded) return { status: 'succeeded' };
  if (attempt === MAX_ATTEMPTS) return { status: 'dead' };
  return { status: 'pending', retryInMs: delaysMs[attempt - 1] };
}

export type BreakerState = 'closed' | 'open' | 'half_open';

/** Closed until opened; open until its pause ends; then half-open until a probe decides. */
export function breakerState(openUntil: Date | null, nowMs: number): BreakerState {
  if (openUntil === null) return 'closed';
  return openUntil.getTime() > nowMs ? 'open' : 'half_open';
}
