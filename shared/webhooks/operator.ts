import { raw } from 'objection';
import { Event, Webhook, WebhookAttempt, WebhookDelivery } from '../db/models';
import { unixOf } from '../ids';
import type { Executor } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { Conflict, NotFound } from '../errors';
import { QUEUES } from '../queues/names';
import { pageQuery, toPage, type Cursor } from '../db/pagination';
import { DELIVER_JOB } from './fanout';

/** What the operator sees of deliveries and attempts, and the replay of a dead delivery. */

function attemptView(a: WebhookAttempt) {
  return {
    round: a.round,
    attempt: a.attempt,
    at: unixOf(a.started_at),
    status_code: a.status_code,
    latency_ms: a.latency_ms,
    error: a.finished_at === null ? null : a.error,
    in_flight: a.finished_at === null,
    response_excerpt: a.response_excerpt,
  };
}

function deliveryView(d: WebhookDelivery, eventType: string, attempts: WebhookAttempt[]) {
  return {
    id: d.id,
    object: 'webhook_delivery',
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event_type: eventType,
    status: d.status,
    // attempts made in the current round (a replay starts again from 1); every round's attempts are listed below
    attempt_count: d.attempts,
    replays: d.round - 1,
    next_attempt_at: d.status === 'pending' ? unixOf(d.next_attempt_at) : null,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    created: d.created,
    completed: unixOf(d.completed_at),
    attempts: attempts.map(attemptView),
  };
}

/** An endpoint's deliveries, newest first, each with its event type and all its attempts. */
export async function listDeliveries(
  db: Executor,
  webhookId: string,
  page: { cursor: Cursor | null; limit: number },
  status?: WebhookDelivery['status'],
) {
  const exists = await Webhook.query(db).findById(webhookId).select('id');
  if (!exists) throw new NotFound('Webhook');
  const q = WebhookDelivery.query(db).where({ webhook_id: webhookId });
  if (status) q.where({ status });
  const rows = await pageQuery(q, page.cursor, page.limit);
  const [events, attempts] = await Promise.all([
    Event.query(db)
      .whereIn(
        'id',
        rows.map((r) => r.event_id),
      )
      .select('id', 'type'),
    WebhookAttempt.query(db)
      .whereIn(
        'delivery_id',
        rows.map((r) => r.id),
      )
      .orderBy(['round', 'attempt']),
  ]);
  const typeOf = new Map(events.map((e) => [e.id, e.type]));
  const byDelivery = new Map<string, WebhookAttempt[]>();
  for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
  return toPage(rows, page.limit, (r) => deliveryView(r, typeOf.get(r.event_id) ?? '', byDelivery.get(r.id) ?? []));
}

/** Sends a dead delivery again from attempt 1 in a new round (same delivery id), to an enabled endpoint only. */
export async function replayDelivery(deps: TransactDeps, deliveryId: string, requestId?: string) {
  return transact(deps, async (trx, outbox) => {
    const d = await trx('webhook_deliveries as d')
      .join('webhooks as w', 'w.id', 'd.webhook_id')
      .where('d.id', deliveryId)
      .forUpdate('d')
      .first('d.id', 'd.status', 'd.round', 'd.webhook_id', 'w.status as webhook_status');
    if (!d) throw new NotFound('Delivery');
    if (d.status !== 'dead')
      throw new Conflict('delivery-not-dead', `Only a dead delivery can be replayed; this one is ${d.status}`);
    if (d.webhook_status !== 'enabled') throw new Conflict('webhook-disabled', 'This webhook is disabled');
    await WebhookDelivery.query(trx)
      .findById(deliveryId)
      .patch({
        status: 'pending',
        round: d.round + 1,
        attempts: 0,
        next_attempt_at: raw('now()'),
        lease_until: null,
        last_status_code: null,
        last_error: null,
        completed_at: null,
        updated_at: raw('now()'),
      });
    await outbox.add(QUEUES.webhookSender, DELIVER_JOB, {
      deliveryId,
      webhookId: d.webhook_id,
      round: d.round + 1,
      requestId,
    });
    return { object: 'webhook_delivery_replay', delivery_id: deliveryId, round: d.round + 1, status: 'pending' };
  });
}
