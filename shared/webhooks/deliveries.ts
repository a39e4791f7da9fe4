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
  /** the merchant's signing secrets, encrypted (null: none stored yet) */
  secret_ciphertext: string | null;
  secret_key_id: string | null;
  /** the replaced secret while its rotation overlap lasts, else null */
  previous_ciphertext: string | null;
  previous_key_id: string | null;
}

const secs = (ms: number) => ms / 1000;

/**
 * Runs one of the sender's hot statements as a named prepared statement: Postgres parses and plans
 * it once per connection instead of once per batch. Always on the pool (never in a caller's
 * transaction): each of these statements is its own transaction.
 */
async function prepared<T>(db: Db, name: string, text: string, values: unknown[]): Promise<T[]> {
  const connection = await db.client.acquireConnection();
  try {
    return (await connection.query({ name, text, values })).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Claims the next attempt of each listed delivery that may be attempted now; returns those claimed.
 * Every row is reached through its primary key (a lateral lookup per id), never through a scan of
 * the pending deliveries, so the plan does not hang on statistics (a backlog written since the
 * last ANALYZE looks tiny to the planner, which then scanned all of it for every batch). Postgres
 * keeps one generic plan for it, instead of planning it again on every call, only if no parameter
 * makes a call's own plan look cheaper: the ids come as JSON (whose length the planner never
 * guesses) and the probe's claim is its own statement. Ids are locked in sorted order, so
 * concurrent claims cannot deadlock.
 */
export async function claimAttempts(db: Db, deliveryIds: string[], leaseMs: number, asProbe: boolean): Promise<ClaimedAttempt[]> {
  // a probe may claim while the breaker is still tripped, as long as it holds the endpoint's probe
  const breaker = asProbe ? 'w.breaker_open_until is null or w.breaker_probe_until > now()' : 'w.breaker_open_until is null';
  return prepared<ClaimedAttempt>(
    db,
    asProbe ? 'webhook_claim_probe' : 'webhook_claim_attempts',
    `with t as materialized (
       select x.* from jsonb_array_elements_text($2::jsonb) as ids(id)
       cross join lateral (
         select d.id, d.event_id, d.webhook_id, d.round, d.attempts + 1 as attempts, d.lease_until, w.url, w.environment, w.merchant_id,
                e.type as event_type, e.created as event_created, e.object_version, e.body as event_body,
                s.secret_ciphertext, s.secret_key_id,
                case when s.previous_expires_at > now() then s.previous_secret_ciphertext end as previous_ciphertext,
                case when s.previous_expires_at > now() then s.previous_secret_key_id end as previous_key_id
           from webhook_deliveries d
           join webhooks w on w.id = d.webhook_id
           join events e on e.id = d.event_id
           left join webhook_secrets s on s.merchant_id = w.merchant_id and s.environment = w.environment
          where d.id = ids.id and d.status = 'pending' and d.attempts < $3
            and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until <= now())
            and w.status = 'enabled' and (${breaker})
            for update of d
       ) x
     ), d as (
       update webhook_deliveries d
          set attempts = d.attempts + 1, lease_until = now() + make_interval(secs => $1), updated_at = now()
        where d.id = any(array(select id from t))
     ), interrupted as (
       -- an attempt left open under an expired lease: its sender died
       update webhook_attempts a set finished_at = now(), error = 'interrupted'
        where a.delivery_id = any(array(select id from t where lease_until is not null)) and a.finished_at is null
     ), a as (
       insert into webhook_attempts (delivery_id, round, attempt, started_at)
       select id, round, attempts, now() from t
       returning id, delivery_id
     )
     select t.id, t.event_id, t.webhook_id, t.round, t.attempts, t.url, t.environment, t.merchant_id, a.id as attempt_id,
            t.event_type, t.event_created, t.object_version, t.event_body,
            t.secret_ciphertext, t.secret_key_id, t.previous_ciphertext, t.previous_key_id
       from t join a on a.delivery_id = t.id`,
    [secs(leaseMs), JSON.stringify([...new Set(deliveryIds)].sort()), MAX_ATTEMPTS],
  );
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

export interface AttemptOutcome {
  claim: ClaimedAttempt;
  result: AttemptResult;
  verdict: AttemptVerdict;
}

/**
 * Records attempts' outcomes, moves each delivery on (next attempt, succeeded or dead) and each
 * endpoint's breaker, in one statement. The breaker sees an endpoint's outcomes in the order
 * given: a success closes it and resets the count; each failure after the last success counts;
 * reaching 20 in a row, or a failed probe, opens it for the pause; a failure while it is open
 * (an attempt already in flight when it opened) leaves the pause as it is. Rows are found through
 * their primary keys (see claimAttempts); deliveries, then endpoints, are locked in id order, so
 * batches from several senders never deadlock. Returns each delivery's new status, or null where
 * that attempt's lease had been lost to a newer attempt.
 */
export async function finishAttempts(db: Db, outcomes: AttemptOutcome[], breakerPauseMs: number): Promise<(AttemptVerdict['status'] | null)[]> {
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
  const rows = await prepared<{ id: string; status: AttemptVerdict['status'] }>(
    db,
    'webhook_finish_attempts',
    `with p as materialized (
       select $1::int as threshold, make_interval(secs => $2) as pause
     ), v as materialized (
       select * from jsonb_to_recordset($3::jsonb) as v(
         seq int, attempt_id bigint, delivery_id text, webhook_id text, round int, attempts int, status_code int,
         latency_ms int, error text, excerpt text, status text, retry_secs float8, ok boolean)
     ), latest as materialized (
       -- each delivery through its primary key, locked, when this attempt is still its latest
       select x.id from v cross join lateral (
         select d.id from webhook_deliveries d
          where d.id = v.delivery_id and d.round = v.round and d.attempts = v.attempts and d.status = 'pending'
            for update
       ) x
     ), att as (
       update webhook_attempts a
          set finished_at = now(), status_code = v.status_code, latency_ms = v.latency_ms, error = v.error, response_excerpt = v.excerpt
         from v where a.id = any(array(select attempt_id from v)) and a.id = v.attempt_id
     ), d as (
       update webhook_deliveries d
          set status = v.status, next_attempt_at = now() + make_interval(secs => v.retry_secs), lease_until = null,
              last_status_code = v.status_code, last_error = v.error, updated_at = now(),
              completed_at = case when v.status = 'pending' then null else now() end
         from v
        where d.id = any(array(select id from latest)) and d.id = v.delivery_id
       returning d.id, d.status
     ), h as materialized (
       select webhook_id, bool_or(ok) as any_ok, count(*) filter (where not ok and seq > coalesce(last_ok, -1)) as failures
         from (select v.*, max(seq) filter (where ok) over (partition by webhook_id) as last_ok from v) x
        group by webhook_id
     ), locked as materialized (
       -- only endpoints whose breaker changes: one that just keeps succeeding is not written (nor locked)
       select w.id from webhooks w join h on h.webhook_id = w.id
        where not h.any_ok or h.failures > 0 or w.consecutive_failures <> 0 or w.breaker_open_until is not null or w.breaker_probe_until is not null
        order by w.id
          for update of w
     ), w as (
       update webhooks w set
         consecutive_failures = case when h.any_ok then h.failures else w.consecutive_failures + h.failures end,
         breaker_open_until = case
           when h.any_ok then case when h.failures >= p.threshold then now() + p.pause else null end
           when w.breaker_open_until > now() then w.breaker_open_until
           when w.breaker_open_until is not null or w.consecutive_failures + h.failures >= p.threshold then now() + p.pause
           else null end,
         breaker_opened_at = case
           when h.any_ok then case when h.failures >= p.threshold then now() else w.breaker_opened_at end
           when w.breaker_open_until > now() then w.breaker_opened_at
           when w.breaker_open_until is not null or w.consecutive_failures + h.failures >= p.threshold then now()
           else w.breaker_opened_at end,
         breaker_probe_until = case when not h.any_ok and w.breaker_open_until > now() then w.breaker_probe_until else null end
       from h join locked l on l.id = h.webhook_id cross join p
       where w.id = h.webhook_id
     )
     select id, status from d`,
    [BREAKER_THRESHOLD, secs(breakerPauseMs), JSON.stringify(items)],
  );
  const status = new Map(rows.map((r) => [r.id, r.status]));
  return outcomes.map((o) => status.get(o.claim.id) ?? null);
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
