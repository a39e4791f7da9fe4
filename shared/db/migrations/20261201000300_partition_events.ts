import type { Knex } from 'knex';
import { partitionOnline, unpartitionOnline, type Referencing } from '../partitionOnline';
import { partitionedTable } from '../partitions';

/**
 * `events` by year on `created` (Unix seconds; docs/retention.md "Ten years of history": monthly
 * partitions made GET /v1/events's planning 20× slower), by the online path of migration
 * 20261201000100: the table as it is becomes the partition before next 1 January, the primary key
 * becomes (id, created).
 *
 * `webhook_deliveries.event_id` referenced `events (id)`, no longer unique alone: deliveries get
 * `event_created`, a stored generated column read from the event id (`evt_<uuid>_<created>_<hex>`,
 * shared/domain/ids.ts newEventId, the only maker of event ids: the uuid has no `_`), and the key
 * becomes (event_id, event_created) → events (id, created). No writer changes. Adding a stored
 * column rewrites webhook_deliveries under an ACCESS EXCLUSIVE lock: the table holds a month of
 * deliveries at most (finished ones are deleted after 30 days), about 120,000 rows at the 100 M
 * traffic; the rewrite's time is in docs/retention.md.
 */
export const config = { transaction: false };

const TABLE = partitionedTable('events');
const DELIVERIES: Referencing = { table: 'webhook_deliveries', columns: ['event_id', 'event_created'] };

export async function up(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw(`set local lock_timeout = '5s'`);
    await trx.raw(
      `alter table webhook_deliveries add column if not exists event_created bigint not null
         generated always as (split_part(event_id, '_', 3)::bigint) stored`,
    );
  });
  await partitionOnline(knex, TABLE, { referencing: [DELIVERIES] });
}

export async function down(knex: Knex): Promise<void> {
  await unpartitionOnline(knex, TABLE, [DELIVERIES]);
  await knex.raw(`alter table webhook_deliveries drop column if exists event_created`);
}
