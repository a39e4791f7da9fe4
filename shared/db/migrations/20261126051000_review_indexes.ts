import type { Knex } from 'knex';

/**
 * GET /admin/attention lists what a provider contradicted (docs/decisions.md#late-success): late
 * successes from the status history, and reports about operations never sent from the inbox.
 * Both are rare, so partial indexes hold only them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index payment_status_changes_late_success_idx on payment_status_changes (at) where reason = 'late-success'`,
  );
  await knex.raw(
    `create index provider_callbacks_never_sent_idx on provider_callbacks (received_at) where outcome = 'never-sent'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index if exists payment_status_changes_late_success_idx`);
  await knex.raw(`drop index if exists provider_callbacks_never_sent_idx`);
}
