import type { Trx } from '../db/knex';
import type { OutboxWriter } from '../db/transact';
import { newEventId, nowUnix } from '../domain/ids';
import { fanOutEvent } from '../webhooks/fanout';
import { exactJson } from '../money';

export type EventType =
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.cancelled'
  | 'refund.succeeded'
  | 'refund.failed'
  | 'payout.succeeded'
  | 'payout.failed'
  | 'settlement.completed'
  | 'webhook.test';

export interface EventBody {
  id: string;
  type: EventType;
  created: number;
  data: { object: Record<string, unknown>; object_version: number };
}

export interface EventRow {
  id: string;
  merchant_id: string;
  environment: 'test' | 'live';
  type: EventType;
  object_id: string;
  object_version: number;
  created: number;
  body: EventBody;
}

/**
 * Writes an event (envelope of spec 6.2 plus `data.object_version`) in the caller's transaction,
 * with its webhook deliveries. Called by every flow in the same transaction as the change.
 */
export async function recordEvent(
  trx: Trx,
  outbox: OutboxWriter,
  input: { merchantId: string; environment: 'test' | 'live'; type: EventType; objectId: string; objectVersion: number; object: Record<string, unknown> },
): Promise<EventRow> {
  const created = nowUnix();
  const id = newEventId(input.objectId, created);
  const body: EventBody = { id, type: input.type, created, data: { object: input.object, object_version: input.objectVersion } };
  const row: EventRow = {
    id,
    merchant_id: input.merchantId,
    environment: input.environment,
    type: input.type,
    object_id: input.objectId,
    object_version: input.objectVersion,
    created,
    body,
  };
  // exactJson: a settlement's figures beyond 2^53 - 1 (bigints) are stored with every digit
  await trx('events').insert({ ...row, body: exactJson(body) });
  await fanOutEvent(trx, row, outbox);
  return row;
}
