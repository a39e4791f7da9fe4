import { Event, WebhookDelivery } from '../db/models';
import type { Caller } from '../caller';
import type { Executor } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { TooManyRequests } from '../errors';
import { createdOfEventId, findEvent } from '../events/read';
import { endpointsFor, insertDeliveries } from './fanout';

/** The merchant's side of deliveries (docs/decisions.md#integrators-kit): list an event's, send it again. */

/** Redeliveries a merchant may ask for, per event. */
export const MAX_REDELIVERIES = 10;

const COLUMNS = [
  'id',
  'event_id',
  'webhook_id',
  'status',
  'attempts',
  'last_status_code',
  'last_error',
  'created',
] as const;
type DeliveryRow = Pick<WebhookDelivery, (typeof COLUMNS)[number]>;

/** The delivery object. `failed`: the last attempt failed, another is scheduled (stored as pending). */
function merchantDeliveryView(d: DeliveryRow) {
  const failedLast = d.attempts > 0 && (d.last_error !== null || d.last_status_code !== null);
  return {
    id: d.id,
    object: 'webhook_delivery' as const,
    event_id: d.event_id,
    webhook_id: d.webhook_id,
    status: d.status === 'pending' && failedLast ? ('failed' as const) : d.status,
    attempts: d.attempts,
    last_response_status: d.last_status_code,
    created: Number(d.created),
  };
}

/** Every delivery of one of the caller's events (its own and the redeliveries), newest first. */
export async function listEventDeliveries(db: Executor, caller: Caller, eventId: string) {
  const event = await findEvent(db, caller, eventId, ['id']);
  const rows: DeliveryRow[] = await WebhookDelivery.query(db)
    .where({ event_id: event.id })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .select(COLUMNS);
  return { object: 'list' as const, data: rows.map(merchantDeliveryView) };
}

/**
 * Sends one of the caller's events again: a new delivery (new id, attempt 1) to each enabled endpoint
 * of its environment that subscribes to its type now. The event row is locked, so two requests at
 * once count twice and the cap holds. A request that finds no endpoint is not counted.
 */
export async function redeliverEvent(deps: TransactDeps, caller: Caller, eventId: string) {
  return transact(deps, async (trx, outbox) => {
    const event = await findEvent(
      trx,
      caller,
      eventId,
      ['id', 'merchant_id', 'environment', 'type', 'object_id', 'body', 'redeliveries'],
      true,
    );
    if (event.redeliveries >= MAX_REDELIVERIES) {
      throw new TooManyRequests(
        'redelivery-limit',
        `This event has been redelivered ${MAX_REDELIVERIES} times already, the most allowed; it stays listed by GET /v1/events/${event.id}`,
      );
    }
    const endpoints = await endpointsFor(trx, event);
    if (endpoints.length === 0) return { object: 'list' as const, data: [] };
    const round = event.redeliveries + 1;
    await Event.query(trx)
      .where({ id: event.id, created: createdOfEventId(event.id) })
      .patch({ redeliveries: round });
    const inserted = await insertDeliveries(trx, outbox, event, endpoints, round, Math.floor(deps.clock.now() / 1000));
    const fresh = { status: 'pending', attempts: 0, last_status_code: null, last_error: null } as const;
    return { object: 'list' as const, data: inserted.map((d) => merchantDeliveryView({ ...d, ...fresh })) };
  });
}
