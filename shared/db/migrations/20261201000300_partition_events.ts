import type { Knex } from 'knex';
import { partitionOnline, unpartitionOnline, withShortLocks, type Referencing } from '../partitionOnline';
import { partitionedTable } from '../partitions';

/**
 * `events` by year on `created` (Unix seconds; docs/retention.md#ten-years-of-history: monthly
 * partitions made GET /v1/events's planning 20× slower), by the online path of migration
 * 20261201000100: the table as it is becomes the partition before next 1 January, the primary key
 * becomes (id, created).
 *
 * `webhook_deliveries.event_id` referenced `events (id)`, no longer unique alone: deliveries get
 * `event_created`, the `created` an event id carries (`evt_<uuid>_<created>_<hex>`,
 * shared/ids.ts newEventId, the only maker of event ids: the uuid has no `_`), and the key
 * becomes (event_id, event_created) → events (id, created). No writer changes: a trigger sets the
 * column from the id on insert. Not a stored generated column: adding one rewrites the table under
 * an ACCESS EXCLUSIVE lock, 3.0 s for 150,000 deliveries on the 1 M fill (docs/retention.md#partitions-built), and
 * every payment that emits an event would wait that long, past the web's 3 s silence bound. Here
 * the column is added empty (no rewrite), filled in batches of 5,000 beside the writes, and made
 * NOT NULL through a validated check (no scan under the lock).
 */
export const config = { transaction: false };

const TABLE = partitionedTable('events');
const DELIVERIES: Referencing = { table: 'webhook_deliveries', columns: ['event_id', 'event_created'] };
const BATCH = 5000;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create or replace function webhook_deliveries_event_created() returns trigger language plpgsql as $$
    begin
      new.event_created := split_part(new.event_id, '_', 3)::bigint;
      return new;
    end $$`);
  await withShortLocks(knex, async (trx) => {
    await trx.raw(`alter table webhook_deliveries add column if not exists event_created bigint`);
    await trx.raw(`drop trigger if exists webhook_deliveries_event_created on webhook_deliveries`);
    await trx.raw(`create trigger webhook_deliveries_event_created before insert or update of event_id on webhook_deliveries
                     for each row execute function webhook_deliveries_event_created()`);
  });
  for (;;) {
    const res = await knex.raw(
      `update webhook_deliveries set event_created = split_part(event_id, '_', 3)::bigint
        where id in (select id from webhook_deliveries where event_created is null limit ${BATCH})`,
    );
    if ((res.rowCount ?? 0) < BATCH) break;
  }
  await withShortLocks(knex, (trx) =>
    trx.raw(`alter table webhook_deliveries add constraint webhook_deliveries_event_created_set
               check (event_created is not null) not valid`),
  );
  await knex.raw(`alter table webhook_deliveries validate constraint webhook_deliveries_event_created_set`);
  await withShortLocks(knex, async (trx) => {
    await trx.raw(`alter table webhook_deliveries alter column event_created set not null`);
    await trx.raw(`alter table webhook_deliveries drop constraint webhook_deliveries_event_created_set`);
  });
  await partitionOnline(knex, TABLE, { referencing: [DELIVERIES] });
}

export async function down(knex: Knex): Promise<void> {
  await unpartitionOnline(knex, TABLE, [DELIVERIES]);
  await knex.raw(`drop trigger if exists webhook_deliveries_event_created on webhook_deliveries`);
  await knex.raw(`drop function if exists webhook_deliveries_event_created()`);
  await knex.raw(`alter table webhook_deliveries drop column if exists event_created`);
}
