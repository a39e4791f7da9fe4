import type { Knex } from 'knex';

/**
 * Credits to a merchant's guarded account are written as pending entries, without touching the
 * account row (no lock: a busy merchant's payments do not queue on it); they are folded into the
 * cached balance under the account's lock by the next debit, or by the ledger sweep.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ledger_entries', (t) => {
    t.boolean('pending').notNullable().defaultTo(false);
  });
  await knex.raw(`create index ledger_entries_pending_idx on ledger_entries (account_id) where pending`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index if exists ledger_entries_pending_idx`);
  await knex.schema.alterTable('ledger_entries', (t) => {
    t.dropColumn('pending');
  });
}
