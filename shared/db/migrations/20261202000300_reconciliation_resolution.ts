import type { Knex } from 'knex';

/**
 * An operator's resolution of a reconciliation item (docs/reconciliation.md#resolving-an-item):
 * the note it was resolved with. `resolved_at` already says when (a status query that settles an
 * open operation resolves its item with no note).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table reconciliation_items add column resolution_note text`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table reconciliation_items drop column if exists resolution_note`);
}
