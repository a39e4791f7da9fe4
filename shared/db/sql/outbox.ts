import type { Executor } from '../knex';
import { runSql, sqlStatement } from './run';

/** The outbox's batched marks (shared/queues/outbox.ts): the rows whose jobs were enqueued, one statement for many. */
const MARK_ENQUEUED = sqlStatement('outbox-mark-enqueued', `update outbox set enqueued_at = now() where id = any($1::uuid[])`);

export async function markOutboxEnqueued(db: Executor, ids: string[]): Promise<void> {
  await runSql(db, MARK_ENQUEUED, [ids]);
}

/** The relay's probe (shared/queues/outbox.ts): is a row older than $1 seconds still not enqueued? Nearly always not. */
const ANY_MISSED = sqlStatement('outbox-any-missed', `select 1 from outbox where enqueued_at is null and created_at < now() - make_interval(secs => $1) limit 1`);

export async function anyOutboxMissed(db: Executor, graceS: number): Promise<boolean> {
  return (await runSql(db, ANY_MISSED, [graceS])).length > 0;
}
