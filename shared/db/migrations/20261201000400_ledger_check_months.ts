import type { Knex } from 'knex';

/**
 * The incremental `ledger:check` (shared/ledger/check.ts, docs/retention.md#ten-years-of-history):
 * a closed month of ledger entries is checked once and its result kept, per account
 * (the sum of its entries that month) and for the month (its verdict: the problems found in its
 * transactions). A run then reads only the months not kept and the open one.
 *
 * `ledger_transactions (created_at)`: a run finds the transactions of the months it reads (with
 * fewer than two entries) by an index range, not by reading every transaction. Built
 * CONCURRENTLY: no transaction around this migration.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table if not exists ledger_check_months (
      month date primary key,
      entries bigint not null,
      transactions bigint not null,
      problems jsonb not null default '[]',
      checked_at timestamptz not null default now())`);
  await knex.raw(`create table if not exists ledger_check_sums (
      month date not null references ledger_check_months (month) on delete cascade,
      account_id bigint not null references ledger_accounts (id),
      total numeric not null,
      primary key (month, account_id))`);
  await knex.raw(
    `create index concurrently if not exists ledger_transactions_created_at_idx on ledger_transactions (created_at)`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index concurrently if exists ledger_transactions_created_at_idx`);
  await knex.raw(`drop table if exists ledger_check_sums`);
  await knex.raw(`drop table if exists ledger_check_months`);
}
