import type { Db, Executor } from '../db/knex';
import type { Environment } from '../db/models';
import type { EventBody } from '../events/record';
import { BREAKER_THRESHOLD, MAX_ATTEMPTS, type AttemptVerdict } from './rules';
import type { AttemptResult } from './http';

/**
 * Delivery rows: Postgres decides every attempt. An attempt is *claimed* by one statement that
 * increments the delivery's attempt counter and sets a lease, only when the delivery is pending,
 * due, not leased, and its endpoint enabled with the breaker closed (or held by this probe), so
 * two jobs for one delivery never send the same attempt. The outcome is written by one statement
 * guarded by (round, attempts): a sender that lost its lease cannot overwrite a newer attempt.
 */

export interface ClaimedAttempt {
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

export async function claimAttempt(db: Executor, deliveryId: string, leaseMs: number, asProbe: boolean): Promise<ClaimedAttempt | null> {
  const { rows } = await db.raw(
    `with d as (
       update webhook_deliveries d
          set attempts = d.attempts + 1, lease_until = now() + make_interval(secs => ?), updated_at = now()
         from webhooks w
        where d.id = ? and w.id = d.webhook_id and d.status = 'pending' and d.attempts < ?
          and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until <= now())
          and w.status = 'enabled'
          and (w.breaker_open_until is null or (?::boolean and w.breaker_probe_until > now()))
       returning d.id, d.event_id, d.webhook_id, d.round, d.attempts, w.url, w.environment, w.merchant_id
     ), interrupted as (
       update webhook_attempts a set finished_at = now(), error = 'interrupted'
         from d where a.delivery_id = d.id and a.finished_at is null
     ), a as (
       insert into webhook_attempts (delivery_id, round, attempt, started_at)
       select id, round, attempts, now() from d
       returning id
     )
     select d.*, a.id as attempt_id, e.type as event_type, e.created as event_created, e.object_version, e.body as event_body
       from d cross join a join events e on e.id = d.event_id`,
    [secs(leaseMs), deliveryId, MAX_ATTEMPTS, asProbe],
  );
  return rows[0] ?? null;
}

/** Why a delivery could not be claimed, as seen by Postgres (its clock decides what is due). */
export interface Diagnosis {
  status: 'pending' | 'succeeded' | 'dead';
  attempts: number;
  leased: boolean;
  not_due: boolean;
  next_attempt_in_ms: number;
  webhook_status: 'enabled' | 'disabled';
  breaker_tripped: boolean;
  breaker_open: boolean;
  breaker_open_for_ms: number;
  probing: boolean;
}

export async function diagnose(db: Executor, deliveryId: string): Promise<Diagnosis | null> {
  const { rows } = await db.raw(
    `select d.status, d.attempts,
            coalesce(d.lease_until > now(), false) as leased,
            d.next_attempt_at > now() as not_due,
            greatest(0, extract(epoch from d.next_attempt_at - now()) * 1000)::int as next_attempt_in_ms,
            w.status as webhook_status,
            w.breaker_open_until is not null as breaker_tripped,
            coalesce(w.breaker_open_until > now(), false) as breaker_open,
            greatest(0, coalesce(extract(epoch from w.breaker_open_until - now()) * 1000, 0))::bigint as breaker_open_for_ms,
            coalesce(w.breaker_probe_until > now(), false) as probing
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.id = ?`,
    [deliveryId],
  );
  return rows[0] ?? null;
}

/** After the pause, one delivery takes the endpoint's probe; false when another holds it. */
export async function takeProbe(db: Executor, webhookId: string, leaseMs: number): Promise<boolean> {
  const n = await db('webhooks')
    .where({ id: webhookId })
    .where('breaker_open_until', '<=', db.fn.now())
    .where((q) => q.whereNull('breaker_probe_until').orWhere('breaker_probe_until', '<=', db.fn.now()))
    .update({ breaker_probe_until: db.raw(`now() + make_interval(secs => ?)`, [secs(leaseMs)]) });
  return n === 1;
}

export async function releaseProbe(db: Executor, webhookId: string): Promise<void> {
  await db('webhooks').where({ id: webhookId }).update({ breaker_probe_until: null });
}

/** Ends a pending delivery without an attempt (its endpoint was disabled, or its last attempt was cut off). */
export async function markDead(db: Executor, deliveryId: string, reason: string): Promise<void> {
  await db.raw(
    `with d as (
       update webhook_deliveries set status = 'dead', lease_until = null, last_error = ?, completed_at = now(), updated_at = now()
        where id = ? and status = 'pending' and (lease_until is null or lease_until <= now())
       returning id
     )
     update webhook_attempts a set finished_at = now(), error = 'interrupted'
       from d where a.delivery_id = d.id and a.finished_at is null`,
    [reason, deliveryId],
  );
}

const FAILURE_BREAKER = `
  update webhooks set
    consecutive_failures = consecutive_failures + 1,
    breaker_open_until = case
      when breaker_open_until > now() then breaker_open_until
      when breaker_open_until is not null or consecutive_failures + 1 >= ? then now() + make_interval(secs => ?)
      else null end,
    breaker_opened_at = case
      when breaker_open_until > now() then breaker_opened_at
      when breaker_open_until is not null or consecutive_failures + 1 >= ? then now()
      else breaker_opened_at end,
    breaker_probe_until = case when breaker_open_until > now() then breaker_probe_until else null end
  where id = ?`;

const SUCCESS_BREAKER = `
  update webhooks set consecutive_failures = 0, breaker_open_until = null, breaker_probe_until = null
   where id = ? and (consecutive_failures <> 0 or breaker_open_until is not null or breaker_probe_until is not null)`;

/**
 * Records an attempt's outcome, moves the delivery on (next attempt, succeeded or dead) and the
 * endpoint's breaker (a failure counts; the 20th in a row, or a failed probe, opens it for the
 * pause; a success closes it), in one statement. Returns the delivery's new state, or null when
 * this attempt's lease had been lost to a newer attempt.
 */
export async function finishAttempt(
  db: Executor,
  claim: ClaimedAttempt,
  result: AttemptResult,
  verdict: AttemptVerdict,
  breakerPauseMs: number,
): Promise<{ status: AttemptVerdict['status'] } | null> {
  const succeeded = verdict.status === 'succeeded';
  const retryInMs = verdict.status === 'pending' ? verdict.retryInMs : 0;
  const breaker = succeeded
    ? { sql: SUCCESS_BREAKER, bindings: [claim.webhook_id] }
    : { sql: FAILURE_BREAKER, bindings: [BREAKER_THRESHOLD, secs(breakerPauseMs), BREAKER_THRESHOLD, claim.webhook_id] };
  const { rows } = await db.raw(
    `with att as (
       update webhook_attempts set finished_at = now(), status_code = ?, latency_ms = ?, error = ?, response_excerpt = ?
        where id = ?
     ), w as (${breaker.sql}
     ), d as (
       update webhook_deliveries
          set status = ?, next_attempt_at = now() + make_interval(secs => ?), lease_until = null,
              last_status_code = ?, last_error = ?, updated_at = now(),
              completed_at = case when ? = 'pending' then null else now() end
        where id = ? and round = ? and attempts = ? and status = 'pending'
       returning status
     )
     select status from d`,
    [
      result.statusCode, result.latencyMs, result.error, result.excerpt, claim.attempt_id,
      ...breaker.bindings,
      verdict.status, secs(retryInMs), result.statusCode, result.error, verdict.status,
      claim.id, claim.round, claim.attempts,
    ],
  );
  return rows[0] ?? null;
}

/** Pending deliveries past due by more than `graceMs` and not in flight: their job may be lost. */
export async function overdueDeliveries(db: Executor, graceMs: number, limit = 500): Promise<{ id: string; webhook_id: string; round: number; attempts: number }[]> {
  const { rows } = await db.raw(
    `select d.id, d.webhook_id, d.round, d.attempts
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.status = 'pending' and d.next_attempt_at < now() - make_interval(secs => ?)
        and (d.lease_until is null or d.lease_until <= now())
        and (w.breaker_open_until is null or w.breaker_open_until < now() - make_interval(secs => ?))
      order by d.next_attempt_at
      limit ?`,
    [secs(graceMs), secs(graceMs), limit],
  );
  return rows;
}

/** Finished deliveries (and their attempts) leave after `days` (decisions.md: 30). */
export async function pruneFinished(db: Db, days = 30, batch = 1000): Promise<number> {
  return db('webhook_deliveries')
    .whereIn(
      'id',
      db('webhook_deliveries')
        .select('id')
        .whereNot('status', 'pending')
        .where('completed_at', '<', db.raw(`now() - make_interval(days => ?)`, [days]))
        .limit(batch),
    )
    .del();
}
