import type { Trx } from '../db/knex';
import type { OutboxWriter } from '../db/transact';
import { newId } from '../domain/ids';
import { recordEvent, type EventInput } from './record';
import { QUEUES } from '../queues/names';
import { subscribes } from './patterns';
import type { EventRow } from '../db/rows';

/** Job name of the webhook-sender queue; its payload is {deliveryId, webhookId}. */
export const DELIVER_JOB = 'deliver';

export async function enabledEndpoints(
  trx: Trx,
  merchantId: string,
  environment: string,
): Promise<{ id: string; events: string[] }[]> {
  // in the event's multi-table transaction, on the hot path (a transition's fan-out): the knex builder, as below
  return trx('webhooks').where({ merchant_id: merchantId, environment, status: 'enabled' }).select('id', 'events');
}

/** The enabled endpoints of the event's merchant and environment that receive it. */
export async function endpointsFor(
  trx: Trx,
  event: Pick<EventRow, 'merchant_id' | 'environment' | 'type' | 'body'>,
): Promise<string[]> {
  const endpoints = await enabledEndpoints(trx, event.merchant_id, event.environment);
  if (event.type === 'webhook.test')
    return endpoints.filter((e) => e.id === String(event.body.data.object.webhook_id)).map((e) => e.id);
  return subscribedEndpoints(endpoints, event.type);
}

/** One new delivery per endpoint, with its job; `redelivery` 0 is the event's own fan-out, n the merchant's n-th. */
export async function insertDeliveries(
  trx: Trx,
  outbox: OutboxWriter,
  event: Pick<EventRow, 'id'>,
  webhookIds: string[],
  redelivery: number,
  created: number,
) {
  if (webhookIds.length === 0) return [];
  const deliveries = deliveryRows(event, webhookIds, created, redelivery);
  await trx('webhook_deliveries').insert(deliveries);
  for (const d of deliveries) await outbox.add(QUEUES.webhookSender, DELIVER_JOB, deliverJob(d));
  return deliveries;
}

/** The endpoints (enabled, of the event's merchant and environment) an event other than `webhook.test` goes to. */
export const subscribedEndpoints = (endpoints: { id: string; events: string[] }[], type: string) =>
  endpoints.filter((r) => subscribes(r.events, type)).map((r) => r.id);

export const deliveryRows = (event: Pick<EventRow, 'id'>, webhookIds: string[], created: number, redelivery = 0) =>
  webhookIds.map((webhookId) => ({
    id: newId('delivery'),
    event_id: event.id,
    webhook_id: webhookId,
    created,
    redelivery,
  }));

export const deliverJob = (d: { id: string; webhook_id: string }) => ({ deliveryId: d.id, webhookId: d.webhook_id });

/**
 * Writes an event and its webhook deliveries (one per matching enabled endpoint, with its outbox job)
 * in the caller's transaction: how every flow emits an event. Nothing is sent from here.
 */
export async function emitEvent(trx: Trx, outbox: OutboxWriter, input: EventInput): Promise<EventRow> {
  const row = await recordEvent(trx, input);
  await insertDeliveries(trx, outbox, row, await endpointsFor(trx, row), 0, row.created);
  return row;
}
