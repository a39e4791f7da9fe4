import type { Knex } from 'knex';

/**
 * The card-charge pool's purge of `card_attempts` (docs/retention.md#purged) finds the rows last
 * written before its cutoff, oldest first: an index on `updated_at`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create index card_attempts_updated_idx on card_attempts (updated_at)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index card_attempts_updated_idx`);
}
