import type { OutboxMessage } from '../rows';
import type { Executor } from '../knex';
import { runSql, sqlStatement } from './run';

/**
 * The outbox's statements. Its one insert (`outboxInsertSql`) is composed into every statement
 * that writes outbox rows: the writer's (shared/operations/writer.ts, joined to the rows it
 * wrote), the inbox's (shared/db/sql/callbacks.ts, a callback with its job) and a flow's job on
 * its own (`insertOutbox`); test/unit/one-writer.test.ts holds it to these.
 */

/** An outbox row's columns as a json recordset reads them (shared/db/rows.ts OutboxMessage). */
export const OUTBOX_COLUMNS = 'id uuid, queue text, job_name text, payload jsonb, delay_ms int, traceparent text';

/** The outbox insert of every statement that writes outbox rows, from `source` (rows with OUTBOX_COLUMNS). */
export const outboxInsertSql = (source: string) =>
  `insert into outbox (id, queue, job_name, payload, delay_ms, traceparent) select id, queue, job_name, payload, delay_ms, traceparent from ${source}`;

const INSERT_OUTBOX = sqlStatement(
  'outbox-insert',
  outboxInsertSql(`json_to_recordset($1::json) as x(${OUTBOX_COLUMNS})`),
);

/** Outbox rows on their own (shared/queues/outbox.ts: a flow's jobs written in its transaction). */
export async function insertOutbox(db: Executor, msgs: OutboxMessage[]): Promise<void> {
  await runSql(db, INSERT_OUTBOX, [JSON.stringify(msgs)]);
}

/** The writer's outbox rows of one operation: its messages, each with the row's id (written only if the row is). */
export const outboxRecords = (objectId: string, msgs: OutboxMessage[]) =>
  msgs.map((m) => ({ object_id: objectId, ...m }));

/** The outbox's batched marks (shared/queues/outbox.ts): the rows whose jobs were enqueued, one statement for many. */
const MARK_ENQUEUED = sqlStatement(
  'outbox-mark-enqueued',
  `update outbox set enqueued_at = now() where id = any($1::uuid[])`,
);

export async function markOutboxEnqueued(db: Executor, ids: string[]): Promise<void> {
  await runSql(db, MARK_ENQUEUED, [ids]);
}

/**
 * The relay's rows (shared/queues/outbox.ts): not enqueued, and older than $1 seconds. Postgres's
 * now() decides here: created_at is its own stamp (the column's default), and a row's age is read
 * in the statement that claims it, by every relay at once.
 */
const MISSED = `enqueued_at is null and created_at < now() - make_interval(secs => $1)`;
/** Its probe: nearly always there are none, and one read without a transaction says so. */
const ANY_MISSED = sqlStatement('outbox-any-missed', `select 1 from outbox where ${MISSED} limit 1`);
/** Its claim, in the caller's transaction: the oldest $2, locked, passing over rows another relay holds. */
const CLAIM_MISSED = sqlStatement(
  'outbox-claim-missed',
  `select * from outbox where ${MISSED} order by created_at limit $2 for update skip locked`,
);

export async function anyOutboxMissed(db: Executor, graceS: number): Promise<boolean> {
  return (await runSql(db, ANY_MISSED, [graceS])).length > 0;
}

export async function claimMissedOutbox(trx: Executor, graceS: number, limit: number): Promise<OutboxMessage[]> {
  return runSql(trx, CLAIM_MISSED, [graceS, limit]);
}
