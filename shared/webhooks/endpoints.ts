import { raw } from 'objection';
import { Merchant, Webhook, WebhookDelivery, type Environment } from '../db/models';
import type { Db, Executor } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { newId, unixOf } from '../ids';
import { Conflict, NotFound, ValidationFailed } from '../errors';
import { emitEvent } from './fanout';
import { destinationProblem, type Resolver } from './destination';
import { patternProblem } from '../events/patterns';
import { breakerState } from './rules';
import type { WebhookRow } from '../db/rows';

/** Operator-side management of webhook endpoints (docs/decisions.md#operator-admin-api). */

export type WebhookInput = Pick<WebhookRow, 'merchant_id' | 'url' | 'events' | 'environment'>;
export type WebhookPatch = Partial<Pick<WebhookRow, 'url' | 'events' | 'status'>>;

// the breaker's times are stamped by Postgres's now() (the sender's statements): read against the wall clock, as Postgres's is
export function webhookView(w: WebhookRow, nowMs = Date.now()) {
  return {
    id: w.id,
    object: 'webhook',
    merchant_id: w.merchant_id,
    url: w.url,
    events: w.events,
    environment: w.environment,
    status: w.status,
    breaker: {
      state: breakerState(w.breaker_open_until, nowMs),
      consecutive_failures: w.consecutive_failures,
      opened_at: unixOf(w.breaker_opened_at),
      open_until: unixOf(w.breaker_open_until),
    },
    created: unixOf(w.created_at),
    updated: unixOf(w.updated_at),
  };
}

function checkPatterns(events: string[]): void {
  events.forEach((p, i) => {
    const why = patternProblem(p);
    if (why) throw new ValidationFailed(`events.${i}`, `events.${i} ${why}`);
  });
}

/**
 * Checks a URL for the environment and returns the one spelling stored and compared: the WHATWG
 * serialisation (scheme and host lowercased, default port dropped, empty path `/`, canonical IPs).
 */
async function checkUrl(url: string, env: Environment, resolve?: Resolver): Promise<string> {
  const why = await destinationProblem(url, env, resolve);
  if (why) throw new ValidationFailed('url', `url ${why}`);
  return new URL(url).href;
}

/**
 * 409 `webhook-exists` when another endpoint of the merchant and environment has the same normalised
 * URL. Takes the merchant's endpoint lock (held until the transaction ends) first, so two
 * registrations of one URL cannot both pass.
 */
async function refuseDuplicate(
  trx: Executor,
  merchantId: string,
  env: Environment,
  url: string,
  exceptId?: string,
): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`webhooks/${merchantId}/${env}`]);
  const rows: { id: string; url: string }[] = await Webhook.query(trx)
    .where({ merchant_id: merchantId, environment: env })
    .select('id', 'url');
  const same = rows.find((r) => r.id !== exceptId && sameUrl(r.url, url));
  if (same)
    throw new Conflict(
      'webhook-exists',
      `An endpoint with this URL is already registered for this merchant and environment (${same.id})`,
    );
}

/** Rows stored before normalisation are compared normalised too. */
function sameUrl(stored: string, url: string): boolean {
  try {
    return new URL(stored).href === url;
  } catch {
    return stored === url;
  }
}

export async function createWebhook(db: Db, input: WebhookInput, resolve?: Resolver) {
  checkPatterns(input.events);
  const merchant = await Merchant.query(db).findById(input.merchant_id).select('id');
  if (!merchant) throw new NotFound('Merchant');
  const url = await checkUrl(input.url, input.environment, resolve);
  return db.transaction(async (trx) => {
    await refuseDuplicate(trx, input.merchant_id, input.environment, url);
    const row = await Webhook.query(trx)
      .insert({
        id: newId('webhook'),
        merchant_id: input.merchant_id,
        environment: input.environment,
        url,
        events: input.events,
      })
      .returning('*');
    return webhookView(row);
  });
}

export async function getWebhook(db: Executor, id: string) {
  const row = await Webhook.query(db).findById(id);
  if (!row) throw new NotFound('Webhook');
  return webhookView(row);
}

/** Every endpoint of a merchant, newest first (a merchant has a handful). */
export async function listWebhooks(db: Executor, merchantId: string) {
  const rows = await Webhook.query(db)
    .where({ merchant_id: merchantId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
  return { object: 'list', data: rows.map((r) => webhookView(r)) };
}

/** Changes url, events or status. A new URL, or enabling again, closes the breaker: the operator has acted. */
export async function updateWebhook(db: Db, id: string, patch: WebhookPatch, resolve?: Resolver) {
  if (patch.events) checkPatterns(patch.events);
  const current = await Webhook.query(db).findById(id);
  if (!current) throw new NotFound('Webhook');
  if (patch.url !== undefined) patch = { ...patch, url: await checkUrl(patch.url, current.environment, resolve) };
  return db.transaction(async (trx) => {
    // merchant and environment never change: the current row's are the locked row's
    if (patch.url !== undefined) await refuseDuplicate(trx, current.merchant_id, current.environment, patch.url, id);
    const w = await Webhook.query(trx).findById(id).forUpdate();
    if (!w) throw new NotFound('Webhook');
    const resetBreaker =
      (patch.url !== undefined && patch.url !== w.url) || (patch.status === 'enabled' && w.status === 'disabled');
    const [row] = await Webhook.query(trx)
      .where({ id })
      .patch({
        ...patch,
        ...(resetBreaker ? { consecutive_failures: 0, breaker_open_until: null, breaker_probe_until: null } : {}),
        version: w.version + 1,
        updated_at: raw('now()'),
      })
      .returning('*');
    return webhookView(row);
  });
}

/** A `webhook.test` event to this endpoint only (docs/decisions.md#operator-admin-api), a real event listed by GET /v1/events; 409 when disabled. */
export async function sendTestEvent(deps: TransactDeps, webhookId: string) {
  return transact(deps, async (trx, outbox) => {
    const w = await Webhook.query(trx).findById(webhookId);
    if (!w) throw new NotFound('Webhook');
    if (w.status !== 'enabled') throw new Conflict('webhook-disabled', 'This webhook is disabled');
    const event = await emitEvent(trx, outbox, {
      merchantId: w.merchant_id,
      environment: w.environment,
      type: 'webhook.test',
      objectId: w.id,
      objectVersion: w.version,
      object: { object: 'webhook_test', webhook_id: w.id, message: 'Test event sent by the operator' },
      at: deps.clock.now(),
    });
    const delivery = await WebhookDelivery.query(trx).findOne({ event_id: event.id, webhook_id: w.id }).select('id');
    return { object: 'webhook_test', webhook_id: w.id, event_id: event.id, delivery_id: delivery!.id };
  });
}
