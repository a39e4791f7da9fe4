import type { Knex } from 'knex';

/**
 * One lifecycle for every provider operation (shared/operations): each row of payments, refunds
 * and payouts records when the provider accepted it (`sent_at`), when its provider window ends
 * (`window_ends_at`) and how often the sweep asked about it since (`checks`), under the same names.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table payments rename column pushed_at to sent_at`);
  for (const table of ['refunds', 'payouts']) {
    await knex.raw(`alter table ${table} add column window_ends_at timestamptz`);
    // the windows these rows had: 30 s in the sandbox, 120 s live (config defaults)
    await knex.raw(
      `update ${table} set window_ends_at = created_at + case when environment = 'test' then interval '30 seconds' else interval '120 seconds' end`,
    );
    await knex.raw(`alter table ${table} alter column window_ends_at set not null`);
  }
  // how often the sweep has asked about it: spaces the questions out (backoff up to 5 minutes)
  for (const table of ['payments', 'refunds', 'payouts'])
    await knex.raw(`alter table ${table} add column checks integer not null default 0`);
  await knex.raw(`drop index refunds_open_idx`);
  await knex.raw(`drop index payouts_open_idx`);
  await knex.raw(`create index refunds_open_window_idx on refunds (window_ends_at) where status = 'pending'`);
  await knex.raw(
    `create index payouts_open_window_idx on payouts (window_ends_at) where status in ('pending','processing')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index refunds_open_window_idx`);
  await knex.raw(`drop index payouts_open_window_idx`);
  await knex.raw(`create index refunds_open_idx on refunds (created_at) where status = 'pending'`);
  await knex.raw(`create index payouts_open_idx on payouts (created_at) where status in ('pending','processing')`);
  for (const table of ['payments', 'refunds', 'payouts']) await knex.raw(`alter table ${table} drop column checks`);
  for (const table of ['refunds', 'payouts']) await knex.raw(`alter table ${table} drop column window_ends_at`);
  await knex.raw(`alter table payments rename column sent_at to pushed_at`);
}
