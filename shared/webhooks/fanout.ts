import type { Trx } from '../db/knex';
import type { OutboxWriter } from '../db/transact';
import type { EventRow } from '../events/record';

/**
 * Webhook fan-out: one delivery row per matching endpoint of the event's merchant and
 * environment, with its outbox job, in the transaction that wrote the event.
 * (Filled in by the webhooks work; until then events are only stored.)
 */
export async function fanOutEvent(_trx: Trx, _event: EventRow, _outbox: OutboxWriter): Promise<void> {}
