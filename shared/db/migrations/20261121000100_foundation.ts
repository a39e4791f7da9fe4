import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('merchants', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.text('fee_bearer').notNullable().defaultTo('merchant');
    // {USD: {percent_bps, fixed}, CDF: {...}}; fixed in minor units
    t.jsonb('fees').notNullable();
    t.bigInteger('per_tx_limit_usd');
    t.bigInteger('per_tx_limit_cdf');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    `alter table merchants add constraint merchants_status_check check (status in ('active','suspended'))`,
  );
  await knex.raw(
    `alter table merchants add constraint merchants_fee_bearer_check check (fee_bearer in ('merchant','customer'))`,
  );

  await knex.schema.createTable('credentials', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('scope').notNullable();
    t.text('api_key_hash').notNullable().unique();
    t.text('api_key_last4').notNullable();
    t.text('secret_ciphertext').notNullable();
    t.text('secret_key_id').notNullable();
    t.specificType('ip_allowlist', 'text[]');
    t.text('replaces_id').references('credentials.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    // null: valid; otherwise the key stops working at this instant (revocation grace)
    t.timestamp('expires_at', { useTz: true });
    t.index(['merchant_id', 'environment']);
  });
  await knex.raw(`alter table credentials add constraint credentials_env_check check (environment in ('test','live'))`);
  await knex.raw(
    `alter table credentials add constraint credentials_scope_check check (scope in ('read','payments','full'))`,
  );

  await knex.schema.createTable('webhook_secrets', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('secret_ciphertext').notNullable();
    t.text('secret_key_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['merchant_id', 'environment']);
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.uuid('key').notNullable();
    t.text('method').notNullable();
    t.text('path').notNullable();
    t.text('request_hash').notNullable();
    t.text('status').notNullable(); // in_progress | completed
    t.integer('response_status');
    t.jsonb('response_headers');
    t.binary('response_body');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('locked_until', { useTz: true });
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['merchant_id', 'environment', 'key']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('outbox', (t) => {
    t.uuid('id').primary();
    t.text('queue').notNullable();
    t.text('job_name').notNullable();
    t.jsonb('payload').notNullable();
    t.integer('delay_ms').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('enqueued_at', { useTz: true });
  });
  await knex.raw(`create index outbox_pending_idx on outbox (created_at) where enqueued_at is null`);

  await knex.schema.createTable('settings', (t) => {
    t.text('key').primary();
    t.jsonb('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['settings', 'outbox', 'idempotency_keys', 'webhook_secrets', 'credentials', 'merchants']) {
    await knex.schema.dropTableIfExists(table);
  }
}
