import type { Db } from './db/knex';
import { cardPaymentMachine } from './operations/kindMachines';

/**
 * Retention (docs/decisions.md#retention-and-transport, docs/retention.md#purged): transactions (payments,
 * refunds, payouts, the ledger, events, settlements) are kept 10 years and never touched here;
 * log-like rows leave after 90 days at most, purged by the pool that owns them:
 *
 * - raw provider callback bodies (callback-reconciler): `raw_body` emptied once the callback
 *   was applied and received more than 90 days ago; the normalised columns stay;
 * - webhook attempt snippets (webhook-sender): `response_excerpt` nulled 90 days after the attempt;
 * - card checkout attempts (card-charge): the `card_attempts` row (payer's IP address and user
 *   agent, a gateway's challenge HTML, the last session id) deleted once its payment is final and
 *   the row was last written more than 90 days ago;
 * - idempotency records and request signatures (outbox-relay): deleted once expired (24 hours
 *   and the signature tolerance: well within 90 days).
 *
 * Each statement touches at most `batch` rows, found through a partial index that holds only
 * the rows still to purge, and skips rows another transaction holds (SKIP LOCKED): no statement
 * holds a lock for long or waits behind the service's own writes. A run stops after `maxBatches`
 * statements, so a backlog is worked off over several runs of the pool's loop.
 */

export const LOG_RETENTION_DAYS = 90;
const DAY_MS = 24 * 3600 * 1000;

export interface PurgeOptions {
  /** the service clock's now, in milliseconds */
  now: number;
  /** rows per statement */
  batch?: number;
  /** statements per run */
  maxBatches?: number;
  /** kept this many days (log-like rows) */
  days?: number;
}

const DEFAULT_BATCH = 1000;
const DEFAULT_MAX_BATCHES = 50;

/** Runs one bounded statement (it returns the rows it touched) until it touches none, or maxBatches times. */
async function inBatches(db: Db, sql: string, cutoff: Date, opts: PurgeOptions, more: string[] = []): Promise<number> {
  const batch = opts.batch ?? DEFAULT_BATCH;
  const maxBatches = opts.maxBatches ?? DEFAULT_MAX_BATCHES;
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    // each statement is its own transaction: its locks last one statement of at most `batch` rows
    const res = await db.raw(sql, [cutoff, ...more, batch]);
    const n: number = res.rowCount ?? 0;
    total += n;
    if (n < batch) break;
  }
  return total;
}

const cutoffOf = (opts: PurgeOptions) => new Date(opts.now - (opts.days ?? LOG_RETENTION_DAYS) * DAY_MS);

/** Raw bodies of applied provider callbacks received before the cutoff ('' : the column is NOT NULL). */
const CALLBACK_BODIES = `
  update provider_callbacks c set raw_body = ''
   where c.id in (select id from provider_callbacks
                   where raw_body <> '' and received_at < ? and processed_at is not null
                   order by received_at limit ? for update skip locked)`;

/**
 * Empties the raw bodies of provider callbacks older than 90 days (the callback-reconciler's).
 * A callback not applied yet keeps its body whatever its age: applying it reads the body.
 */
export function purgeCallbackBodies(db: Db, opts: PurgeOptions): Promise<number> {
  return inBatches(db, CALLBACK_BODIES, cutoffOf(opts), opts);
}

const ATTEMPT_EXCERPTS = `
  update webhook_attempts a set response_excerpt = null
   where a.id in (select id from webhook_attempts
                   where response_excerpt is not null and started_at < ?
                   order by started_at limit ? for update skip locked)`;

/** Nulls the answer snippets of webhook attempts older than 90 days (the webhook-sender's); the attempt's status, latency and error stay. */
export function purgeAttemptExcerpts(db: Db, opts: PurgeOptions): Promise<number> {
  return inBatches(db, ATTEMPT_EXCERPTS, cutoffOf(opts), opts);
}

const CARD_ATTEMPTS = `
  delete from card_attempts
   where payment_id = any (array(
     select a.payment_id from card_attempts a join payments p on p.id = a.payment_id
      where a.updated_at < ? and p.method = 'card' and not (p.status = any(?::text[]))
      order by a.updated_at limit ? for update of a skip locked))`;

/**
 * Deletes the checkout attempts of card payments that are final (no charge, ask or 3-D Secure
 * page reads them again) and were last written more than 90 days ago (the card-charge pool's).
 * An open payment keeps its row whatever its age: its ask names the attempt's ids.
 */
export function purgeCardAttempts(db: Db, opts: PurgeOptions): Promise<number> {
  return inBatches(db, CARD_ATTEMPTS, cutoffOf(opts), opts, [`{${cardPaymentMachine.open.join(',')}}`]);
}

const EXPIRED_KEYS = `
  delete from idempotency_keys
   where ctid = any (array(select ctid from idempotency_keys where expires_at < ? limit ? for update skip locked))`;

/** Deletes expired idempotency records (24 hours, docs/decisions.md#merchant-pipeline), in bounded batches (the outbox-relay's). */
export function purgeIdempotencyKeys(db: Db, opts: PurgeOptions): Promise<number> {
  return inBatches(db, EXPIRED_KEYS, new Date(opts.now), opts);
}

const EXPIRED_SIGNATURES = `
  delete from request_signatures
   where ctid = any (array(select ctid from request_signatures where expires_at < ? limit ? for update skip locked))`;

/** Deletes request signatures whose timestamp left the tolerance, in bounded batches (the outbox-relay's). */
export function purgeRequestSignatures(db: Db, opts: PurgeOptions): Promise<number> {
  return inBatches(db, EXPIRED_SIGNATURES, new Date(opts.now), opts);
}
