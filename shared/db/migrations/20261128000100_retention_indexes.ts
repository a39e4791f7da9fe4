import type { Knex } from 'knex';

/**
 * Retention (shared/retention.ts): the purges of raw callback bodies and webhook attempt
 * snippets find their rows through partial indexes that hold only the rows still to purge (at
 * most 90 days of them), so each bounded batch is an index range, never a scan of 10 years.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index provider_callbacks_raw_kept_idx on provider_callbacks (received_at) where raw_body <> '' and processed_at is not null`,
  );
  await knex.raw(
    `create index webhook_attempts_excerpt_kept_idx on webhook_attempts (started_at) where response_excerpt is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index if exists provider_callbacks_raw_kept_idx`);
  await knex.raw(`drop index if exists webhook_attempts_excerpt_kept_idx`);
}
