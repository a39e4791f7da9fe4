import type { Executor, Trx } from '../db/knex';
import type { OutboxWriter } from '../db/transact';
import { runSql, sqlStatement } from '../db/sql/run';
import { newId } from '../ids';
import { recordEvent, type EventInput } from '../events/record';
import { subscribes } from '../events/patterns';
import { QUEUES } from '../queues/names';
import type { EventRow } from '../db/rows';

/**
 * An event's fan-out: which endpoints receive it, and its webhook deliveries with their jobs.
 * What the kernel writes with a move's event (shared/operations/writer.ts composes
 * `insertDeliveriesSql`), so this module is of the kernel's layer 2 (test/unit/imports.test.ts)
 * though it lives with the webhooks: it imports nothing above that layer.
 */

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

/** The endpoints (enabled, of the event's merchant and environment) an event other than `webhook.test` goes to. */
export const subscribedEndpoints = (endpoints: { id: string; events: string[] }[], type: string) =>
  endpoints.filter((r) => subscribes(r.events, type)).map((r) => r.id);

/** New deliveries of an event, one per endpoint (pure): the one builder of a delivery's values. */
export const deliveryRows = (event: Pick<EventRow, 'id'>, webhookIds: string[], created: number, redelivery = 0) =>
  webhookIds.map((webhookId) => ({
    id: newId('delivery'),
    event_id: event.id,
    webhook_id: webhookId,
    created,
    redelivery,
  }));

export const deliverJob = (d: { id: string; webhook_id: string }) => ({ deliveryId: d.id, webhookId: d.webhook_id });

/** A delivery's columns as a json recordset reads them: its id and endpoint, and its event's object (the join). */
export const DELIVERY_COLUMNS = 'object_id text, id text, webhook_id text';

/** The deliveries of one event's object as the statements read them (deliveryRows' ids and endpoints). */
export const deliveryRecords = (objectId: string, deliveries: { id: string; webhook_id: string }[]) =>
  deliveries.map((d) => ({ object_id: objectId, id: d.id, webhook_id: d.webhook_id }));

/**
 * The one insert into webhook_deliveries: from the json parameter `param` (rows with
 * DELIVERY_COLUMNS), each joined to its event in `events` (rows with id, object_id, created) by
 * the event's object, so a delivery is written only with its event (in the writer's statement:
 * only with an event it wrote, itself only for a row it wrote). It takes its event_id and its
 * created from that row: an event's own fan-out is created with the event; a redelivery round
 * gives its own instant. `redelivery` 0 is the event's own fan-out, n the merchant's n-th round.
 */
export const insertDeliveriesSql = (param: string, events: string, redelivery = '0') =>
  `insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
             select x.id, ${events}.id, x.webhook_id, ${events}.created, ${redelivery} from json_to_recordset(${param}::json) as x(${DELIVERY_COLUMNS}) join ${events} on ${events}.object_id = x.object_id`;

/** Deliveries on their own: $1 the event's id, $2 its object, $3 the deliveries' created, $4 the rows, $5 the round. */
const INSERT_DELIVERIES = sqlStatement(
  'insert-deliveries',
  `with ev as (select $1::text as id, $2::text as object_id, $3::bigint as created)
       ${insertDeliveriesSql('$4', 'ev', '$5::int')}`,
);

/** One new delivery per endpoint, with its job; `redelivery` 0 is the event's own fan-out, n the merchant's n-th. */
export async function insertDeliveries(
  db: Executor,
  outbox: OutboxWriter,
  event: Pick<EventRow, 'id' | 'object_id'>,
  webhookIds: string[],
  redelivery: number,
  created: number,
) {
  if (webhookIds.length === 0) return [];
  const deliveries = deliveryRows(event, webhookIds, created, redelivery);
  const records = JSON.stringify(deliveryRecords(event.object_id, deliveries));
  await runSql(db, INSERT_DELIVERIES, [event.id, event.object_id, created, records, redelivery]);
  for (const d of deliveries) await outbox.add(QUEUES.webhookSender, DELIVER_JOB, deliverJob(d));
  return deliveries;
}

/**
 * Writes an event and its webhook deliveries (one per matching enabled endpoint, with its outbox job)
 * in the caller's transaction: how every flow other than the kernel's emits an event. Nothing is sent from here.
 */
export async function emitEvent(trx: Trx, outbox: OutboxWriter, input: EventInput): Promise<EventRow> {
  const row = await recordEvent(trx, input);
  await insertDeliveries(trx, outbox, row, await endpointsFor(trx, row), 0, row.created);
  return row;
}
