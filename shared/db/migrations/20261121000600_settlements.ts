import type { Knex } from 'knex';

/** Daily settlement batches, and which batch covered each ledger transaction. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('settlements', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('currency').notNullable();
    // Unix seconds; the batch covers ledger transactions created before period_end
    t.bigInteger('period_start').notNullable();
    t.bigInteger('period_end').notNullable();
    // minor units
    t.bigInteger('gross').notNullable();
    t.bigInteger('fees').notNullable();
    t.bigInteger('refunds').notNullable();
    t.bigInteger('payouts').notNullable();
    t.bigInteger('net').notNullable();
    t.integer('count').notNullable();
    // Unix seconds: the API's `created` and the list cursor
    t.bigInteger('created').notNullable();
    t.integer('version').notNullable().defaultTo(1);
    // docs/decisions.md#balance-and-settlement: one batch per merchant, environment, currency and period, however many workers run
    t.unique(['merchant_id', 'environment', 'currency', 'period_end']);
  });
  await knex.raw(`create index settlements_list on settlements (merchant_id, environment, created desc, id desc)`);

  // A ledger transaction belongs to at most one batch: the column is set once, under the row lock,
  // so a transaction is never counted twice, and one committed late is taken by the next batch.
  await knex.schema.alterTable('ledger_transactions', (t) => {
    t.text('settlement_id').references('settlements.id');
    t.index(['settlement_id']);
  });
  // what the daily check looks for; the *_settle postings never join a batch, so they stay out
  await knex.raw(
    `create index ledger_transactions_unsettled on ledger_transactions (merchant_id, environment, currency, created_at)
     where settlement_id is null and kind in ('payment_credit', 'refund_debit', 'refund_return', 'payout_debit', 'payout_return')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists ledger_transactions_unsettled');
  await knex.schema.alterTable('ledger_transactions', (t) => {
    t.dropColumn('settlement_id');
  });
  await knex.schema.dropTableIfExists('settlements');
}
