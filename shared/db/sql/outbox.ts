import type { Executor } from '../knex';
import { runSql, sqlStatement } from './run';

/** The outbox's batched marks (shared/queues/outbox.ts): the rows whose jobs were enqueued, one statement for many. */
const MARK_ENQUEUED = sqlStatement('outbox-mark-enqueued', `update outbox set enqueued_at = now() where id = any($1::uuid[])`);

export async function markOutboxEnqueued(db: Executor, ids: string[]): Promise<void> {
  await runSql(db, MARK_ENQUEUED, [ids]);
}
