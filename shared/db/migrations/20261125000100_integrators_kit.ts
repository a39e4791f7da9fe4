import type { Knex } from 'knex';

/**
 * The integrator's kit (docs/decisions.md#integrators-kit): webhook secret rotation, merchant redeliveries, operator
 * availability (closures and recent provider outcomes).
 */
export async function up(knex: Knex): Promise<void> {
  // Rotation: the secret replaced last keeps signing (beside the new one) until previous_expires_at.
  await knex.schema.alterTable('webhook_secrets', (t) => {
    t.text('previous_secret_ciphertext');
    t.text('previous_secret_key_id');
    t.timestamp('previous_expires_at', { useTz: true });
    t.timestamp('rotated_at', { useTz: true });
  });

  // Redelivery: a new delivery of an (event, endpoint) pair; 0 for the fan-out's own delivery.
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.integer('redelivery').notNullable().defaultTo(0);
  });
  await knex.raw(`alter table webhook_deliveries drop constraint webhook_deliveries_event_id_webhook_id_unique`);
  await knex.raw(
    `alter table webhook_deliveries add constraint webhook_deliveries_event_webhook_redelivery_unique unique (event_id, webhook_id, redelivery)`,
  );
  // how many times the merchant asked for the event again (at most 10)
  await knex.schema.alterTable('events', (t) => {
    t.integer('redeliveries').notNullable().defaultTo(0);
  });

  // Closures the operator sets per operator and direction (PUT /admin/operators/{operator}).
  await knex.schema.createTable('operator_closures', (t) => {
    t.text('operator').notNullable();
    t.text('direction').notNullable();
    t.timestamp('closed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['operator', 'direction']);
  });
  await knex.raw(
    `alter table operator_closures add constraint operator_closures_direction_check check (direction in ('collection','payout','refund'))`,
  );

  // Provider calls per operator, direction, environment and 10-second bucket: what `delayed` is computed from.
  await knex.schema.createTable('provider_health', (t) => {
    t.text('operator').notNullable();
    t.text('direction').notNullable();
    t.text('environment').notNullable();
    t.timestamp('bucket', { useTz: true }).notNullable();
    t.integer('calls').notNullable().defaultTo(0);
    // timed out, unreachable, or answered 5xx / 408 / 429
    t.integer('failures').notNullable().defaultTo(0);
    // answered, but slower than the availability threshold
    t.integer('slow').notNullable().defaultTo(0);
    t.bigInteger('latency_ms_sum').notNullable().defaultTo(0);
    t.primary(['operator', 'direction', 'environment', 'bucket']);
  });
  await knex.raw(`create index provider_health_bucket_idx on provider_health (bucket)`);

  // Statements: a merchant's ledger lines by time (CSV export) and by settlement batch.
  await knex.raw(
    `create index ledger_transactions_settlement_created_idx on ledger_transactions (settlement_id, created_at, id) where settlement_id is not null`,
  );
  await knex.raw(
    `create index ledger_transactions_merchant_created_idx on ledger_transactions (merchant_id, environment, created_at, id)`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index if exists ledger_transactions_merchant_created_idx`);
  await knex.raw(`drop index if exists ledger_transactions_settlement_created_idx`);
  await knex.schema.dropTableIfExists('provider_health');
  await knex.schema.dropTableIfExists('operator_closures');
  await knex.schema.alterTable('events', (t) => t.dropColumn('redeliveries'));
  await knex.raw(`alter table webhook_deliveries drop constraint webhook_deliveries_event_webhook_redelivery_unique`);
  await knex.raw(`delete from webhook_deliveries where redelivery > 0`);
  await knex.raw(
    `alter table webhook_deliveries add constraint webhook_deliveries_event_id_webhook_id_unique unique (event_id, webhook_id)`,
  );
  await knex.schema.alterTable('webhook_deliveries', (t) => t.dropColumn('redelivery'));
  await knex.schema.alterTable('webhook_secrets', (t) => {
    t.dropColumn('previous_secret_ciphertext');
    t.dropColumn('previous_secret_key_id');
    t.dropColumn('previous_expires_at');
    t.dropColumn('rotated_at');
  });
}
