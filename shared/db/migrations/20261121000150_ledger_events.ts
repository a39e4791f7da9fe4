import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Double-entry ledger: every movement is one transaction whose entries sum to zero per currency.
  await knex.schema.createTable('ledger_accounts', (t) => {
    t.bigIncrements('id').primary();
    // merchant id, or 'platform' for the service's own accounts
    t.text('owner').notNullable();
    t.text('environment').notNullable();
    t.text('currency').notNullable();
    t.text('kind').notNullable();
    t.boolean('allow_negative').notNullable().defaultTo(false);
    // cache of the sum of the account's folded entries (credits wait unfolded until a debit or the sweep folds them: migration 700)
    t.bigInteger('balance').notNullable().defaultTo(0);
    t.unique(['owner', 'environment', 'currency', 'kind']);
  });
  await knex.raw(
    `alter table ledger_accounts add constraint ledger_accounts_non_negative check (allow_negative or balance >= 0)`,
  );
  await knex.raw(
    `alter table ledger_accounts add constraint ledger_accounts_currency check (currency in ('USD','CDF'))`,
  );

  await knex.schema.createTable('ledger_transactions', (t) => {
    t.uuid('id').primary();
    t.text('kind').notNullable();
    t.text('reference_id').notNullable();
    t.text('environment').notNullable();
    t.text('currency').notNullable();
    t.text('merchant_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // one posting per (kind, object): posting twice is a no-op, so every job is safe to run twice
    t.unique(['kind', 'reference_id']);
    t.index(['merchant_id', 'environment', 'currency', 'created_at']);
  });

  await knex.schema.createTable('ledger_entries', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('transaction_id').notNullable().references('ledger_transactions.id');
    t.bigInteger('account_id').notNullable().references('ledger_accounts.id');
    t.bigInteger('amount').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['transaction_id']);
    t.index(['account_id']);
  });
  await knex.raw(`alter table ledger_entries add constraint ledger_entries_nonzero check (amount <> 0)`);

  // Events (docs/decisions.md#webhooks): written in the same transaction as the change they report.
  await knex.schema.createTable('events', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('type').notNullable();
    t.text('object_id').notNullable();
    t.integer('object_version').notNullable();
    // Unix seconds, the `created` of the envelope and the list cursor
    t.bigInteger('created').notNullable();
    // the exact envelope sent to webhook endpoints
    t.jsonb('body').notNullable();
    t.index(['merchant_id', 'environment', 'created', 'id']);
    t.index(['merchant_id', 'environment', 'type', 'created', 'id']);
    t.index(['object_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['events', 'ledger_entries', 'ledger_transactions', 'ledger_accounts']) {
    await knex.schema.dropTableIfExists(table);
  }
}
