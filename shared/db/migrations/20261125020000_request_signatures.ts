import type { Knex } from 'knex';

/**
 * Signatures of the signed POST requests accepted without an Idempotency-Key (docs/decisions.md#refund-retries):
 * the same signature again, while its timestamp is still within the
 * tolerance, is a replay (409 request-replayed). Kept until the timestamp leaves the tolerance,
 * after which the timestamp check refuses the request anyway; purged by the outbox-relay pool.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('request_signatures', (t) => {
    t.text('merchant_id').notNullable();
    t.text('environment').notNullable();
    t.text('signature').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['merchant_id', 'environment', 'signature']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('request_signatures');
}
