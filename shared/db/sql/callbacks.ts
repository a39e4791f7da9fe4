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
  'store-callbacks',
  `with x as materialized (
     select * from jsonb_to_recordset($1::jsonb) as x(
       id uuid, provider text, raw_body text, verified boolean, provider_event_id text, object_kind text, object_id text, reported_status text, provider_ref text,
       job_id uuid, job_queue text, job_name text, job_payload jsonb, job_delay_ms int)
   ), c as (
     insert into provider_callbacks (id, provider, raw_body, verified, provider_event_id, object_kind, object_id, reported_status, provider_ref)
     select id, provider, raw_body, verified, provider_event_id, object_kind, object_id, reported_status, provider_ref from x
   )
   insert into outbox (id, queue, job_name, payload, delay_ms) select job_id, job_queue, job_name, job_payload, job_delay_ms from x`,
);

/**
 * Inbox rows, each with the outbox row of the job that applies it, in one statement (one round
 * trip, one commit) for however many callbacks arrived together. The batch is one transaction:
 * it commits whole or not at all (no constraint refuses a single callback).
 */
export async function insertCallbacksWithJobs(db: Executor, items: { row: InboxRow; job: OutboxMessage }[]): Promise<void> {
  await runSql(db, STORE, [
    JSON.stringify(
      items.map(({ row, job }) => ({ ...row, job_id: job.id, job_queue: job.queue, job_name: job.job_name, job_payload: job.payload, job_delay_ms: job.delay_ms })),
    ),
  ]);
}
