import type { EventBody } from '../db/rows';

/**
 * The event envelope of spec 6.2 in its documented key order (Postgres jsonb does not keep key
 * order), exactly as webhook deliveries send it and GET /v1/events returns it.
 */
export function eventEnvelope(row: { id: string; type: string; created: number | string; object_version: number; body: EventBody }): EventBody {
  return {
    id: row.id,
    type: row.type as EventBody['type'],
    created: Number(row.created),
    data: { object: row.body.data.object, object_version: row.object_version },
  };
}
