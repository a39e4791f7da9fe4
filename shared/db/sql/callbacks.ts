import type { OutboxMessage } from '../../queues/outbox';
import type { Executor } from '../knex';
import { runSql, sqlStatement } from './run';

/** A verified provider callback as the inbox stores it. */
export interface InboxRow {
  id: string;
  provider: string;
  raw_body: string;
  verified: boolean;
  provider_event_id: string | null;
  object_kind: string;
  object_id: string;
  reported_status: string;
  provider_ref: string | null;
}

const STORE = sqlStatement(
  'store-callback',
  `with c as (
     insert into provider_callbacks (id, provider, raw_body, verified, provider_event_id, object_kind, object_id, reported_status, provider_ref)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
   )
   insert into outbox (id, queue, job_name, payload, delay_ms) values ($10, $11, $12, $13, $14)`,
);

/** The inbox row and the outbox row of the job that applies it, in one statement (one round trip, one commit). */
export async function insertCallbackWithJob(db: Executor, row: InboxRow, job: OutboxMessage): Promise<void> {
  await runSql(db, STORE, [
    row.id, row.provider, row.raw_body, row.verified, row.provider_event_id, row.object_kind, row.object_id, row.reported_status, row.provider_ref,
    job.id, job.queue, job.job_name, JSON.stringify(job.payload), job.delay_ms,
  ]);
}
