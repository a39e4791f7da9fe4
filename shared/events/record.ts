import type { Trx } from '../db/knex';
import { newEventId } from '../domain/ids';
import type { Environment, EventType } from '../vocabulary';
import { exactJson } from '../money';
import type { EventBody, EventRow } from '../db/rows';

export interface EventInput {
  merchantId: string;
  environment: Environment;
  type: EventType;
  objectId: string;
  objectVersion: number;
  object: Record<string, unknown>;
  /** when the change it announces happened, from the process's clock (ms) */
  at: number;
}

/** A new event's row (pure): its id, creation time and envelope (spec 6.2 plus `data.object_version`). */
export function newEventRow(input: EventInput): EventRow {
  const created = Math.floor(input.at / 1000);
  const id = newEventId(input.objectId, created);
  const body: EventBody = {
    id,
    type: input.type,
    created,
    data: { object: input.object, object_version: input.objectVersion },
  };
  return {
    id,
    merchant_id: input.merchantId,
    environment: input.environment,
    type: input.type,
    object_id: input.objectId,
    object_version: input.objectVersion,
    created,
    body,
  };
}

/** The stored form of an event's body. exactJson: a settlement's figures beyond 2^53 - 1 (bigints) are stored with every digit. */
export const storedBody = (row: EventRow) => exactJson(row.body);

/** Writes an event in the caller's transaction (flows use emitEvent, which adds its deliveries). */
export async function recordEvent(trx: Trx, input: EventInput): Promise<EventRow> {
  const row = newEventRow(input);
  // in the caller's multi-table transaction, on the hot path (a transition's event): the knex builder
  await trx('events').insert({ ...row, body: storedBody(row) });
  return row;
}
