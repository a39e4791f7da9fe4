import type { Knex } from 'knex';

/**
 * The trace context an operation was created in (W3C traceparent; null with traces off): a
 * provider that forwards none on its callback (a live one) still has the callback join the
 * operation's trace, and so does the client's card payment from the checkout page.
 */
const TABLES = ['payments', 'refunds', 'payouts'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) await knex.schema.alterTable(table, (t) => t.text('traceparent'));
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) await knex.schema.alterTable(table, (t) => t.dropColumn('traceparent'));
}
