import type { Knex } from 'knex';

/**
 * A callback's normalised fields, as its connector parsed them (shared/providers/connector.ts):
 * the kernel reads these and never parses a provider's raw body again. `amount` (minor units)
 * and `currency` are what the provider says moved, compared with the operation before anything
 * is applied. Callbacks are found by the provider's reference too (an API that names only its own).
 * `amount-mismatch` outcomes are listed by GET /admin/attention, as `never-sent` ones are.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('provider_callbacks', (t) => {
    t.text('failure_code');
    t.text('failure_message');
    t.bigInteger('amount');
    t.text('currency');
  });
  await knex.raw('create index provider_callbacks_provider_ref_idx on provider_callbacks (provider, provider_ref)');
  await knex.raw(
    `create index provider_callbacks_amount_mismatch_idx on provider_callbacks (received_at) where outcome = 'amount-mismatch'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists provider_callbacks_amount_mismatch_idx');
  await knex.raw('drop index if exists provider_callbacks_provider_ref_idx');
  await knex.schema.alterTable('provider_callbacks', (t) => {
    for (const c of ['failure_code', 'failure_message', 'amount', 'currency']) t.dropColumn(c);
  });
}
