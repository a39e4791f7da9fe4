import type { Knex } from 'knex';

/**
 * Payment links (docs/decisions.md#payment-links): a merchant's link a client pays
 * through on the hosted page /pay/{id}. A payment made through one names it (`payment_link`),
 * listed by GET /v1/payments?payment_link= through its own index. `payments_made` numbers the
 * link's payments for their generated reference (`<link id>-<n>`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payment_links', (t) => {
    t.text('id').primary();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('environment').notNullable();
    t.text('currency').notNullable();
    t.bigInteger('amount');
    t.bigInteger('min_amount');
    t.bigInteger('max_amount');
    t.text('description').notNullable();
    t.jsonb('methods').notNullable();
    t.boolean('single_use').notNullable().defaultTo(false);
    t.bigInteger('expires_at');
    t.text('return_url');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.bigInteger('created').notNullable();
    t.bigInteger('deactivated');
    t.integer('payments_made').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    `create index payment_links_list_idx on payment_links (merchant_id, environment, created desc, id desc)`,
  );
  await knex.schema.alterTable('payments', (t) => t.text('payment_link').references('payment_links.id'));
  await knex.raw(
    `create index payments_link_list_idx on payments (payment_link, created desc, id desc) where payment_link is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists payments_link_list_idx');
  await knex.schema.alterTable('payments', (t) => t.dropColumn('payment_link'));
  await knex.schema.dropTableIfExists('payment_links');
}
