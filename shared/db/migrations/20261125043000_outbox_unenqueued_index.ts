import type { Knex } from 'knex';

/** "pending" names a status only: the outbox has none, and its index of rows not enqueued yet says so. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter index outbox_pending_idx rename to outbox_unenqueued_idx`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter index outbox_unenqueued_idx rename to outbox_pending_idx`);
}
