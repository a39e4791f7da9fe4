import { Event } from '../db/models';
import type { Caller } from '../caller';
import type { Executor } from '../db/knex';
import { UUID_V4_RE } from '../ids';
import { NotFound } from '../errors';
import { cursorOf, pageQuery, toPage, type Cursor } from '../db/pagination';
import type { EventBody, EventRow } from '../db/rows';

/** GET /v1/events: the caller's events, newest first, in the webhook envelope, to catch up on anything missed. */

/** `evt_<uuid>_<unix seconds>_<8 hex>` (docs/decisions.md#names). */
function isEventId(id: string): boolean {
  const m = /^evt_([0-9a-f-]{36})_\d{1,12}_[0-9a-f]{8}$/.exec(id);
  return m !== null && UUID_V4_RE.test(m[1]);
}

/** The `created` an event id carries (its third part): events are partitioned on it (docs/retention.md#partitions-built). */
export const createdOfEventId = (id: string) => Number(id.split('_')[2]);

/**
 * The event envelope in its documented key order (docs/decisions.md#webhooks) (Postgres jsonb does not keep key
 * order), exactly as webhook deliveries send it and GET /v1/events returns it.
 */
export function eventEnvelope(row: {
  id: string;
  type: string;
  created: number | string;
  object_version: number;
  body: EventBody;
}): EventBody {
  return {
    id: row.id,
    type: row.type as EventBody['type'],
    created: Number(row.created),
    data: { object: row.body.data.object, object_version: row.object_version },
  };
}

/** The cursor of payments' lists (`<created>.<id>`), with an event id after the dot. */
export const parseEventCursor = (raw: string | undefined) => cursorOf(raw, isEventId);

const COLUMNS = ['id', 'type', 'created', 'object_version', 'body'] as const;
type EventRecord = Pick<EventRow, (typeof COLUMNS)[number]>;

export async function listEvents(
  db: Executor,
  caller: Caller,
  query: { type?: string; cursor: Cursor | null; limit: number },
) {
  const q = Event.query(db).where({ merchant_id: caller.merchantId, environment: caller.environment }).select(COLUMNS);
  if (query.type) q.where({ type: query.type });
  const rows: EventRecord[] = await pageQuery(q, query.cursor, query.limit);
  return toPage(rows, query.limit, eventEnvelope);
}

/** One of the caller's events, its `columns` read (the row locked when asked); 404 for another merchant's or environment's. */
export async function findEvent(
  db: Executor,
  caller: Caller,
  id: string,
  columns: readonly string[],
  lock = false,
): Promise<Event> {
  if (!isEventId(id)) throw new NotFound('Event');
  const q = Event.query(db)
    // `created` from the id: one partition read (events are partitioned by year on it, docs/retention.md#partitions-built)
    .findOne({ id, created: createdOfEventId(id), merchant_id: caller.merchantId, environment: caller.environment })
    .select(columns);
  if (lock) q.forUpdate();
  const row = await q;
  if (!row) throw new NotFound('Event');
  return row;
}

export async function getEvent(db: Executor, caller: Caller, id: string) {
  return eventEnvelope(await findEvent(db, caller, id, COLUMNS));
}
