import type { Knex } from 'knex';

/**
 * Every ledger transaction (one per payment that succeeds) was written into an index that no
 * statement reads: the unsettled rows are found by `ledger_transactions_unsettled` (partial, the
 * same columns), a merchant's statement pages by `ledger_transactions_merchant_created_idx`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`drop index if exists ledger_transactions_merchant_id_environment_currency_created_at`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `create index if not exists ledger_transactions_merchant_id_environment_currency_created_at on ledger_transactions (merchant_id, environment, currency, created_at)`,
  );
}
