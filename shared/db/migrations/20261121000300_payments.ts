import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payments', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('status').notNullable();
    t.text('method').notNullable();
    t.text('currency').notNullable();
    // the request's `amount`, kept so the fee split can be explained later
    t.bigInteger('amount').notNullable();
    t.bigInteger('amount_charged').notNullable();
    t.bigInteger('amount_net').notNullable();
    t.bigInteger('fee').notNullable();
    t.text('fee_bearer').notNullable();
    t.bigInteger('amount_refunded').notNullable().defaultTo(0);
    t.text('reference').notNullable();
    t.text('description');
    // `json`, not `jsonb`: the merchant's metadata is echoed with its keys in the order sent
    t.json('metadata').notNullable();
    t.text('operator');
    t.text('phone');
    t.text('customer_email');
    t.text('customer_name');
    t.text('return_url');
    t.text('provider');
    t.text('provider_ref');
    t.text('failure_code');
    t.text('failure_message');
    // object_version of the payment's events: 1 at creation, +1 per change
    t.integer('version').notNullable().defaultTo(1);
    // Unix seconds: the API's `created` / `completed` and the list cursor
    t.bigInteger('created').notNullable();
    t.bigInteger('completed');
    // the push reached the provider (set once, under the row lock)
    t.timestamp('pushed_at', { useTz: true });
    // when a payment still open must be settled by the reconciliation sweep
    t.timestamp('window_ends_at', { useTz: true }).notNullable();
    // last time the sweep asked the provider; spaces out the questions about one payment
    t.timestamp('checked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['merchant_id', 'environment', 'reference'], { indexName: 'payments_reference_unique' });
  });
  await knex.raw(
    `alter table payments add constraint payments_status_check check (status in ('pending','processing','succeeded','failed','cancelled','refunded'))`,
  );
  await knex.raw(`alter table payments add constraint payments_env_check check (environment in ('test','live'))`);
  await knex.raw(`alter table payments add constraint payments_method_check check (method in ('mobile_money','card'))`);
  await knex.raw(`alter table payments add constraint payments_currency_check check (currency in ('USD','CDF'))`);
  await knex.raw(
    `alter table payments add constraint payments_money_check check (amount > 0 and amount_net > 0 and fee >= 0 and amount_charged = amount_net + fee and amount_refunded between 0 and amount_charged)`,
  );
  // list paths: newest first, ties broken by id; with and without the status filter
  await knex.raw(`create index payments_list_idx on payments (merchant_id, environment, created desc, id desc)`);
  await knex.raw(
    `create index payments_status_list_idx on payments (merchant_id, environment, status, created desc, id desc)`,
  );
  // the reconciliation sweep only ever looks at open payments
  await knex.raw(
    `create index payments_open_window_idx on payments (window_ends_at) where status in ('pending','processing')`,
  );

  // History as data: every status change of a payment, beside the current status on the row.
  await knex.schema.createTable('payment_status_changes', (t) => {
    t.bigIncrements('id').primary();
    t.text('payment_id').notNullable().references('payments.id');
    t.text('from_status');
    t.text('to_status').notNullable();
    t.text('reason').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['payment_id', 'id']);
  });

  // Inbox of provider callbacks: stored verified and raw, applied by the callback-reconciler.
  await knex.schema.createTable('provider_callbacks', (t) => {
    t.uuid('id').primary();
    t.text('provider').notNullable();
    t.text('raw_body').notNullable();
    // only verified callbacks are stored; the column says so to whoever reads the table
    t.boolean('verified').notNullable();
    t.text('provider_event_id');
    t.text('object_kind').notNullable();
    t.text('object_id').notNullable();
    t.text('reported_status').notNullable();
    t.text('provider_ref');
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('processed_at', { useTz: true });
    // applied | duplicate | ignored-late | unknown-object | environment-mismatch
    t.text('outcome');
    t.index(['object_kind', 'object_id']);
  });
  await knex.raw(
    `create index provider_callbacks_unprocessed_idx on provider_callbacks (received_at) where processed_at is null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['provider_callbacks', 'payment_status_changes', 'payments']) {
    await knex.schema.dropTableIfExists(table);
  }
}
