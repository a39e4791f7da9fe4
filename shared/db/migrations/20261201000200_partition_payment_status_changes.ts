import type { Knex } from 'knex';
import { partitionOnline, unpartitionOnline } from '../partitionOnline';
import { partitionedTable } from '../partitions';

/**
 * `payment_status_changes` by month on `at` (docs/retention.md#ten-years-of-history), by the
 * online path of migration 20261201000100: the table as it is becomes the partition before the
 * first day of next month, the primary key becomes (id, at). No transaction around it: the
 * unique index is built CONCURRENTLY.
 */
export const config = { transaction: false };

const TABLE = partitionedTable('payment_status_changes');

export async function up(knex: Knex): Promise<void> {
  await partitionOnline(knex, TABLE);
}

export async function down(knex: Knex): Promise<void> {
  await unpartitionOnline(knex, TABLE);
}
