import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Merchant endpoints (docs/decisions.md#webhooks), configured by the operator; one environment each.
  await knex.schema.createTable('webhooks', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('url').notNullable();
    // glob patterns such as `payment.*`
    t.specificType('events', 'text[]').notNullable();
    t.text('status').notNullable().defaultTo('enabled');
    // grows with each change of the endpoint; the object_version of its webhook.test events
    t.integer('version').notNullable().defaultTo(1);
    // circuit breaker (docs/decisions.md#webhooks): failed attempts in a row, and while open, until when
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.timestamp('breaker_opened_at', { useTz: true });
    t.timestamp('breaker_open_until', { useTz: true });
    // after the pause, the one delivery allowed to probe holds the endpoint until this instant
    t.timestamp('breaker_probe_until', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['merchant_id', 'environment', 'status']);
  });
  await knex.raw(`alter table webhooks add constraint webhooks_env_check check (environment in ('test','live'))`);
  await knex.raw(`alter table webhooks add constraint webhooks_status_check check (status in ('enabled','disabled'))`);

  // One delivery per (event, endpoint): its id is the X-Service-Delivery-Id of every attempt.
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.text('id').primary();
    t.text('event_id').notNullable().references('events.id');
    t.text('webhook_id').notNullable().references('webhooks.id');
    t.text('status').notNullable().defaultTo('pending');
    // 1, then one more per operator replay; attempts count from 1 again in each round
    t.integer('round').notNullable().defaultTo(1);
    // attempts started in this round; the claim of an attempt increments it (the truth, not Redis)
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // an attempt is in flight until this instant; past it, the sender that held it is presumed dead
    t.timestamp('lease_until', { useTz: true });
    t.integer('last_status_code');
    t.text('last_error');
    // Unix seconds: the list cursor of the operator's delivery list
    t.bigInteger('created').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.unique(['event_id', 'webhook_id']);
    t.index(['webhook_id', 'created', 'id']);
  });
  await knex.raw(
    `alter table webhook_deliveries add constraint webhook_deliveries_status_check check (status in ('pending','succeeded','dead'))`,
  );
  await knex.raw(
    `alter table webhook_deliveries add constraint webhook_deliveries_attempts_check check (attempts between 0 and 8)`,
  );
  // the sweep for lost jobs, and the 30-day purge of finished deliveries
  await knex.raw(
    `create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending'`,
  );
  await knex.raw(
    `create index webhook_deliveries_finished_idx on webhook_deliveries (completed_at) where status <> 'pending'`,
  );

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id').primary();
    t.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('round').notNullable();
    t.integer('attempt').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    // null while in flight
    t.timestamp('finished_at', { useTz: true });
    t.integer('status_code');
    t.integer('latency_ms');
    t.text('error');
    // first characters of the answer, masked (phones, e-mails, cards, keys)
    t.text('response_excerpt');
    t.unique(['delivery_id', 'round', 'attempt']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhooks']) {
    await knex.schema.dropTableIfExists(table);
  }
}
