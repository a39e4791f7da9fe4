import type { CallbackColumns, OutboxMessage } from '../rows';
import type { Executor } from '../knex';
import { runSql, sqlStatement } from './run';
import { OUTBOX_COLUMNS, outboxInsertSql } from './outbox';

/** A provider callback as the inbox stores it: its raw body beside its normalised columns. */
export interface InboxRow extends CallbackColumns {
  raw_body: string;
  amount: number | null;
}

const STORE = sqlStatement(
  'store-callbacks',
  `with c as (
     insert into provider_callbacks (id, provider, raw_body, verified, provider_event_id, object_kind, object_id, reported_status, provider_ref, failure_code, failure_message, amount, currency)
     select * from jsonb_to_recordset($1::jsonb) as x(
       id uuid, provider text, raw_body text, verified boolean, provider_event_id text, object_kind text, object_id text, reported_status text, provider_ref text,
       failure_code text, failure_message text, amount bigint, currency text)
   )
   ${outboxInsertSql(`jsonb_to_recordset($2::jsonb) as j(${OUTBOX_COLUMNS})`)}`,
);

/**
 * Inbox rows with the outbox rows of the jobs that apply them, in one statement (one round
 * trip, one commit) for however many callbacks arrived together. The batch is one transaction:
 * it commits whole or not at all (no constraint refuses a single callback).
 */
export async function insertCallbacksWithJobs(db: Executor, rows: InboxRow[], jobs: OutboxMessage[]): Promise<void> {
  await runSql(db, STORE, [JSON.stringify(rows), JSON.stringify(jobs)]);
}

/** The re-drive's (shared/providers/inbox.ts): callbacks not applied yet, received before $1, oldest first, at most $2. */
const UNAPPLIED = sqlStatement(
  'callbacks-unapplied',
  `select id from provider_callbacks where processed_at is null and received_at < $1 order by received_at limit $2`,
);

export async function unappliedCallbackIds(db: Executor, receivedBefore: Date, limit: number): Promise<string[]> {
  return (await runSql<{ id: string }>(db, UNAPPLIED, [receivedBefore, limit])).map((r) => r.id);
}
