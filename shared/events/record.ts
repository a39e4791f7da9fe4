import type { Executor } from '../db/knex';
import { runSql, sqlStatement } from '../db/sql/run';
import { newEventId } from '../ids';
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

/** A new event's row (pure): its id, creation time and envelope (docs/decisions.md#webhooks, with `data.object_version`). */
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
const storedBody = (row: EventRow) => exactJson(row.body);

/**
 * An event as the statements that insert it read it: newEventRow's values, the body in its stored
 * form. The one shape of an event's row, whatever writes it (the writer's `e`, recordEvent).
 */
export type EventRecord = Omit<EventRow, 'body'> & { body: string };

export const eventRecord = (row: EventRow): EventRecord => ({ ...row, body: storedBody(row) });

/** An EventRecord's columns as a json recordset reads them (object_id first: the writer joins on it). */
export const EVENT_COLUMNS =
  'object_id text, id text, merchant_id text, environment text, type text, object_version int, created bigint, body text';

/**
 * The one insert into events, from `source` (rows with EVENT_COLUMNS): the writer's `e` (a
 * move's event, from the events of the rows it wrote) and recordEvent. The body goes in as its
 * stored text (storedBody: exact digits), cast to jsonb here; every column comes from the row
 * (newEventRow), none from Postgres, so an event reads the same whichever path wrote it.
 */
export const insertEventsSql = (source: string) =>
  `insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
             select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb from ${source}`;

const INSERT_EVENT = sqlStatement(
  'insert-event',
  insertEventsSql(`json_to_recordset($1::json) as v(${EVENT_COLUMNS})`),
);

/** Writes an event in the caller's transaction (flows use emitEvent, shared/webhooks/fanout.ts, which adds its deliveries). */
export async function recordEvent(db: Executor, input: EventInput): Promise<EventRow> {
  const row = newEventRow(input);
  await runSql(db, INSERT_EVENT, [JSON.stringify([eventRecord(row)])]);
  return row;
}
