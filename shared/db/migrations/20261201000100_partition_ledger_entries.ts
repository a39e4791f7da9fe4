import type { Knex } from 'knex';
import { partitionOnline, unpartitionOnline } from '../partitionOnline';
import { partitionedTable } from '../partitions';

/**
 * `ledger_entries` by month on `created_at` (docs/retention.md#ten-years-of-history), by the
 * online path: the table as it is becomes the partition of everything before the first day of
 * next month (`ledger_entries_before_<yyyymm>`), the primary key becomes (id, created_at), the
 * `ledger_balances` view is recreated on the parent, the next 12 months and a DEFAULT partition
 * are created. No transaction around it: the unique index is built CONCURRENTLY.
 */
export const config = { transaction: false };

const TABLE = partitionedTable('ledger_entries');

export async function up(knex: Knex): Promise<void> {
  await partitionOnline(knex, TABLE);
}

export async function down(knex: Knex): Promise<void> {
  await unpartitionOnline(knex, TABLE);
}
