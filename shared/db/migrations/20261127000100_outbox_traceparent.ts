import type { Knex } from 'knex';

/**
 * A job's trace context rides with its outbox row (docs/operating.md#traces, shared/tracing): the W3C
 * traceparent of the span that wrote the row, so that its job, enqueued after commit or by the
 * relay later, continues the payment's trace. Null with traces off, and in rows written before.
 * Adding a nullable column without a default rewrites nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table outbox add column traceparent text`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table outbox drop column traceparent`);
}
