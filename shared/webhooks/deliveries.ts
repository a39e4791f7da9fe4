import { raw } from 'objection';
import { Webhook, WebhookDelivery, type Environment } from '../db/models';
import type { Db, Executor } from '../db/knex';
import { CLAIM, CLAIM_AS_PROBE, FINISH } from '../db/sql/webhookDeliveries';
import { runSql } from '../db/sql/run';
import { BREAKER_THRESHOLD, MAX_ATTEMPTS, type AttemptVerdict } from './rules';
import type { AttemptResult } from './http';
import type { EventBody } from '../db/rows';
import type { SigningSecretsRow } from '../merchants/webhookSecrets';

/**
 * Delivery rows: Postgres decides every attempt. An attempt is *claimed* by one statement that
 * increments the delivery's attempt counter and sets a lease, only when the delivery is pending,
 * due, not leased, and its endpoint enabled with the breaker closed (or held by this probe), so
 * two jobs for one delivery never send the same attempt. The outcome is written by one statement
 * guarded by (round, attempts): a sender that lost its lease cannot overwrite a newer attempt.
 * (Statements: shared/db/sql/webhookDeliveries.ts.)
 */

/** A claimed attempt, with what sending it needs (its signing secrets as the claim read them). */
export interface ClaimedAttempt extends SigningSecretsRow {
  id: string;
  event_id: string;
  webhook_id: string;
  round: number;
  attempts: number;
  url: string;
  environment: Environment;
  merchant_id: string;
  attempt_id: number;
  event_type: string;
  event_created: number;
  object_version: number;
  event_body: EventBody;
}

const secs = (ms: number) => ms / 1000;

/** Claims the next attempt of each listed delivery that may be attempted now. */
export async function claimAttempts(
  db: Db,
  deliveryIds: string[],
  leaseMs: number,
  asProbe: boolean,
): Promise<ClaimedAttempt[]> {
  return runSql<ClaimedAttempt>(db, asProbe ? CLAIM_AS_PROBE : CLAIM, [
    secs(leaseMs),
    JSON.stringify([...new Set(deliveryIds)].sort()),
    MAX_ATTEMPTS,
  ]);
}

/** After the pause, one delivery takes the endpoint's probe; false when another holds it. */
export async function takeProbe(db: Executor, webhookId: string, leaseMs: number): Promise<boolean> {
  const n = await Webhook.query(db)
    .where({ id: webhookId })
    .where('breaker_open_until', '<=', raw('now()'))
    .where((q) => q.whereNull('breaker_probe_until').orWhere('breaker_probe_until', '<=', raw('now()')))
    .patch({ breaker_probe_until: raw(`now() + make_interval(secs => ?)`, [secs(leaseMs)]) });
  return n === 1;
}

export async function releaseProbe(db: Executor, webhookId: string): Promise<void> {
  await Webhook.query(db).findById(webhookId).patch({ breaker_probe_until: null });
}

export type AttemptOutcome = { claim: ClaimedAttempt; result: AttemptResult; verdict: AttemptVerdict };

/**
 * Records attempts' outcomes, moves each delivery on (next attempt, succeeded or dead) and each
 * endpoint's breaker, in one statement. The breaker sees an endpoint's outcomes in the order
 * given: a success closes it and resets the count; each failure after the last success counts;
 * reaching 20 in a row, or a failed probe, opens it for the pause; a failure while it is open (an
 * attempt in flight when it opened) leaves the pause as it is. Returns each delivery's new status,
 * or null where that attempt's lease had been lost to a newer attempt.
 */
export async function finishAttempts(
  db: Db,
  outcomes: AttemptOutcome[],
  breakerPauseMs: number,
): Promise<(AttemptVerdict['status'] | null)[]> {
  const items = outcomes.map(({ claim, result, verdict }, seq) => ({
    seq,
    attempt_id: claim.attempt_id,
    delivery_id: claim.id,
    webhook_id: claim.webhook_id,
    round: claim.round,
    attempts: claim.attempts,
    status_code: result.statusCode,
    latency_ms: result.latencyMs,
    error: result.error,
    excerpt: result.excerpt,
    status: verdict.status,
    retry_secs: verdict.status === 'pending' ? secs(verdict.retryInMs) : 0,
    ok: verdict.status === 'succeeded',
  }));
  // deliveries are locked in id order, as claims lock them; `seq` keeps the order of the outcomes
  items.sort((x, y) => (x.delivery_id < y.delivery_id ? -1 : x.delivery_id > y.delivery_id ? 1 : 0));
  const rows = await runSql<{ id: string; status: AttemptVerdict['status'] }>(db, FINISH, [
    BREAKER_THRESHOLD,
    secs(breakerPauseMs),
    JSON.stringify(items),
  ]);
  const status = new Map(rows.map((r) => [r.id, r.status]));
  return outcomes.map((o) => status.get(o.claim.id) ?? null);
}

/** Finished deliveries (and their attempts) leave after `days` (docs/decisions.md#webhooks: 30). */
export async function pruneFinished(db: Db, days = 30, batch = 1000): Promise<number> {
  return WebhookDelivery.query(db)
    .whereIn(
      'id',
      WebhookDelivery.query()
        .select('id')
        .whereNot('status', 'pending')
        .where('completed_at', '<', raw(`now() - make_interval(days => ?)`, [days]))
        .limit(batch),
    )
    .delete();
}
