import { runSql, sqlStatement } from './run';
import type { Executor } from '../knex';

/**
 * The webhook sender's statements (rules: shared/webhooks/deliveries.ts), each run on the pool as
 * its own transaction, never in a caller's. Postgres's now() decides inside them, not the service
 * clock: leases, due times, the breaker and a rotated secret's end are written and compared in
 * the statements that claim and record attempts, by every sender process at once, and one clock
 * (the database's) keeps a process whose clock runs ahead from taking a lease still held.
 */

/**
 * Claims the next attempt of each listed delivery that may be attempted now; returns those claimed.
 * $1 lease in seconds, $2 the delivery ids as a JSON array (sorted, unique), $3 the attempts limit.
 * Every row is reached through its primary key (a lateral lookup per id), never a scan of the
 * pending deliveries, so the plan does not hang on statistics (a backlog written since the last
 * ANALYZE looks tiny to the planner, which then scanned all of it for every batch). Postgres keeps
 * one generic plan only if no parameter makes a call's own plan look cheaper: the ids come as JSON
 * (whose length the planner never guesses) and the probe's claim is its own statement. Ids are
 * locked in sorted order, so concurrent claims cannot deadlock.
 */
function claimStatement(asProbe: boolean) {
  // a probe may claim while the breaker is still tripped, as long as it holds the endpoint's probe
  const breaker = asProbe
    ? 'w.breaker_open_until is null or w.breaker_probe_until > now()'
    : 'w.breaker_open_until is null';
  return sqlStatement(
    asProbe ? 'webhook_claim_probe' : 'webhook_claim_attempts',
    `with t as materialized (
       select x.* from jsonb_array_elements_text($2::jsonb) as ids(id)
       cross join lateral (
         select d.id, d.event_id, d.webhook_id, d.round, d.attempts + 1 as attempts, d.lease_until, w.url, w.environment, w.merchant_id,
                e.type as event_type, e.created as event_created, e.object_version, e.body as event_body,
                s.secret_ciphertext, s.secret_key_id,
                -- Postgres's now(), the clock that set previous_expires_at (shared/merchants/webhookSecrets.ts)
                case when s.previous_expires_at > now() then s.previous_secret_ciphertext end as previous_ciphertext,
                case when s.previous_expires_at > now() then s.previous_secret_key_id end as previous_key_id
           from webhook_deliveries d
           join webhooks w on w.id = d.webhook_id
           join events e on e.id = d.event_id and e.created = d.event_created
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
  );
}

export const CLAIM = claimStatement(false);
export const CLAIM_AS_PROBE = claimStatement(true);

/**
 * Records attempts' outcomes, moves each delivery and each endpoint's breaker. $1 breaker threshold,
 * $2 pause in seconds, $3 the outcomes as JSON (sorted by delivery id). Rows are found through their
 * primary keys, as in the claim; deliveries, then endpoints, are locked in id order, so batches
 * from several senders never deadlock.
 */
export const FINISH = sqlStatement(
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
);

const DIAGNOSE = sqlStatement(
  'webhook_diagnose',
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
    where d.id = $1`,
);

/** Why a delivery could not be claimed, as seen by Postgres (its clock decides what is due): its state and its endpoint's. */
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
  const [row] = await runSql<Diagnosis>(db, DIAGNOSE, [deliveryId]);
  return row ?? null;
}

const MARK_DEAD = sqlStatement(
  'webhook_mark_dead',
  `with d as (
     update webhook_deliveries set status = 'dead', lease_until = null, last_error = $1, completed_at = now(), updated_at = now()
      where id = $2 and status = 'pending' and (lease_until is null or lease_until <= now())
     returning id
   )
   update webhook_attempts a set finished_at = now(), error = 'interrupted'
     from d where a.delivery_id = d.id and a.finished_at is null`,
);

/** Ends a pending, unleased delivery without an attempt (endpoint disabled, last attempt cut off); closes its open attempt. */
export async function markDead(db: Executor, deliveryId: string, reason: string): Promise<void> {
  await runSql(db, MARK_DEAD, [reason, deliveryId]);
}

/**
 * The re-drive's (shared/webhooks/sweep.ts): pending deliveries due before $1, not in flight, nor
 * held by an open breaker until then; oldest first, at most $2.
 */
const DUE = sqlStatement(
  'webhook_deliveries_due',
  `select d.id, d.webhook_id, d.round from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.status = 'pending' and d.next_attempt_at < $1 and (d.lease_until is null or d.lease_until <= now())
      and (w.breaker_open_until is null or w.breaker_open_until < $1)
    order by d.next_attempt_at limit $2`,
);

export async function dueDeliveryRows(
  db: Executor,
  dueBefore: Date,
  limit: number,
): Promise<{ id: string; webhook_id: string; round: number }[]> {
  return runSql(db, DUE, [dueBefore, limit]);
}
