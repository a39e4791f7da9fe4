import type { Knex } from 'knex';

/**
 * docs/decisions.md#replayed-signed-requests: a signature, not a key, identifies a request. The
 * Idempotency-Key a signature was first accepted with is kept beside it: the same signature
 * again with that key is answered by the key (replayed), with no key or another key it is 409
 * request-replayed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('request_signatures', (t) => {
    t.text('idempotency_key');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('request_signatures', (t) => {
    t.dropColumn('idempotency_key');
  });
}
