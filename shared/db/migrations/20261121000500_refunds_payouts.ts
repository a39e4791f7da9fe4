import type { Knex } from 'knex';

/** Money leaving a merchant's balance: refunds of payments and payouts (B2C), each with its history. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('refunds', (t) => {
    t.text('id').primary();
    t.text('payment_id').notNullable().references('payments.id');
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('status').notNullable();
    t.bigInteger('amount').notNullable();
    t.text('currency').notNullable();
    t.text('reason');
    // copied from the payment: a refund goes back to the phone that paid (spec rule 4)
    t.text('operator').notNullable();
    t.text('phone').notNullable();
    t.text('provider');
    t.text('provider_ref');
    t.text('failure_code');
    t.text('failure_message');
    // object_version of the refund's events: 1 at creation, +1 per change
    t.integer('version').notNullable().defaultTo(1);
    // Unix seconds: the API's `created` / `completed`
    t.bigInteger('created').notNullable();
    t.bigInteger('completed');
    // the provider accepted the refund request (set once, under the row lock)
    t.timestamp('sent_at', { useTz: true });
    // last time the reconciliation sweep asked the provider; spaces out the questions about one refund
    t.timestamp('checked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    `alter table refunds add constraint refunds_status_check check (status in ('pending','succeeded','failed'))`,
  );
  await knex.raw(`alter table refunds add constraint refunds_amount_check check (amount > 0)`);
  await knex.raw(`create index refunds_payment_idx on refunds (payment_id, created, id)`);
  await knex.raw(`create index refunds_merchant_idx on refunds (merchant_id, environment, created desc, id desc)`);
  await knex.raw(`create index refunds_open_idx on refunds (created_at) where status = 'pending'`);

  await knex.schema.createTable('refund_status_changes', (t) => {
    t.bigIncrements('id').primary();
    t.text('refund_id').notNullable().references('refunds.id');
    t.text('from_status');
    t.text('to_status').notNullable();
    t.text('reason').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['refund_id', 'id']);
  });

  await knex.schema.createTable('payouts', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('status').notNullable();
    t.bigInteger('amount').notNullable();
    t.bigInteger('fee').notNullable();
    t.text('currency').notNullable();
    t.text('method').notNullable();
    t.text('operator').notNullable();
    t.text('phone').notNullable();
    t.text('reference').notNullable();
    t.text('description');
    // `json`, not `jsonb`: metadata is echoed with its keys in the order sent
    t.json('metadata').notNullable();
    t.text('provider');
    t.text('provider_ref');
    t.text('failure_code');
    t.text('failure_message');
    t.integer('version').notNullable().defaultTo(1);
    t.bigInteger('created').notNullable();
    t.bigInteger('completed');
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('checked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['merchant_id', 'environment', 'reference'], { indexName: 'payouts_reference_unique' });
  });
  await knex.raw(
    `alter table payouts add constraint payouts_status_check check (status in ('pending','processing','succeeded','failed'))`,
  );
  await knex.raw(`alter table payouts add constraint payouts_env_check check (environment in ('test','live'))`);
  await knex.raw(`alter table payouts add constraint payouts_currency_check check (currency in ('USD','CDF'))`);
  await knex.raw(`alter table payouts add constraint payouts_money_check check (amount > 0 and fee >= 0)`);
  await knex.raw(`create index payouts_list_idx on payouts (merchant_id, environment, created desc, id desc)`);
  await knex.raw(
    `create index payouts_status_list_idx on payouts (merchant_id, environment, status, created desc, id desc)`,
  );
  await knex.raw(`create index payouts_open_idx on payouts (created_at) where status in ('pending','processing')`);

  await knex.schema.createTable('payout_status_changes', (t) => {
    t.bigIncrements('id').primary();
    t.text('payout_id').notNullable().references('payouts.id');
    t.text('from_status');
    t.text('to_status').notNullable();
    t.text('reason').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['payout_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['payout_status_changes', 'payouts', 'refund_status_changes', 'refunds']) {
    await knex.schema.dropTableIfExists(table);
  }
}
