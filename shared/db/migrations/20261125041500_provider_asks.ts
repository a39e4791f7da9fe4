import type { Knex } from 'knex';

/**
 * One word for asking a provider about an open operation: "ask". The sweep's columns on every
 * operation table become `asked_at` (the last time the provider was asked) and `asks` (how many
 * times), and an outcome learned by asking is recorded in the status history as `provider-asked`.
 */
const TABLES = ['payments', 'refunds', 'payouts'];
const HISTORY = ['payment_status_changes', 'refund_status_changes', 'payout_status_changes'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw(`alter table ${table} rename column checked_at to asked_at`);
    await knex.raw(`alter table ${table} rename column checks to asks`);
  }
  for (const table of HISTORY)
    await knex.raw(`update ${table} set reason = 'provider-asked' where reason = 'reconciliation'`);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of HISTORY)
    await knex.raw(`update ${table} set reason = 'reconciliation' where reason = 'provider-asked'`);
  for (const table of TABLES) {
    await knex.raw(`alter table ${table} rename column asks to checks`);
    await knex.raw(`alter table ${table} rename column asked_at to checked_at`);
  }
}
