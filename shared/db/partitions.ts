import type { Knex } from 'knex';

/**
 * The history tables partitioned by time (docs/retention.md#ten-years-of-history): declarative
 * range partitions, one a month for `ledger_entries` (on `created_at`) and
 * `payment_status_changes` (on `at`), one a year for `events` (on `created`, Unix seconds).
 *
 * Names carry the bounds, so that reading them needs no parsing of Postgres's bound text:
 * `<table>_before_<yyyymm>` is the table as it was before partitioning, attached for values from
 * MINVALUE to the first instant of that month (UTC); `<table>_<yyyymm>` holds that month,
 * `<table>_<yyyy>` that year; `<table>_default` is the DEFAULT partition, a safety net: an insert
 * never fails for want of a partition (a payment must not fail for that), and rows there raise an
 * alert (`history_partition_default_rows`) instead of being moved by the service.
 */

export type PartitionUnit = 'month' | 'year';

export interface PartitionedTable {
  table: string;
  /** the partition key */
  column: string;
  unit: PartitionUnit;
  /** the key is Unix seconds (bigint), not a timestamptz */
  unix: boolean;
}

export const PARTITIONED: readonly PartitionedTable[] = [
  { table: 'ledger_entries', column: 'created_at', unit: 'month', unix: false },
  { table: 'payment_status_changes', column: 'at', unit: 'month', unix: false },
  { table: 'events', column: 'created', unit: 'year', unix: true },
];

export const partitionedTable = (table: string): PartitionedTable => {
  const t = PARTITIONED.find((p) => p.table === table);
  if (!t) throw new Error(`${table} is not a partitioned history table`);
  return t;
};

/** Months created ahead of the service clock's month by the maintenance (a year: 12). */
export const MONTHS_AHEAD = 12;

/** The first instant (UTC, ms) of the period (month or year) holding `ms`. */
export function periodStart(ms: number, unit: PartitionUnit): number {
  const d = new Date(ms);
  return unit === 'month' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) : Date.UTC(d.getUTCFullYear(), 0, 1);
}

/** The first instant (UTC, ms) of the period after the one starting at `start`, `n` periods on. */
export function periodAfter(start: number, unit: PartitionUnit, n = 1): number {
  const d = new Date(start);
  return unit === 'month'
    ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1)
    : Date.UTC(d.getUTCFullYear() + n, 0, 1);
}

const pad = (n: number) => String(n).padStart(2, '0');
const yyyymm = (ms: number) => `${new Date(ms).getUTCFullYear()}${pad(new Date(ms).getUTCMonth() + 1)}`;

/** The name of the partition holding the period starting at `start`. */
export const partitionName = (t: PartitionedTable, start: number) =>
  `${t.table}_${t.unit === 'month' ? yyyymm(start) : new Date(start).getUTCFullYear()}`;

/** The old table's name once it is a partition, ending at `cutover`. */
export const beforeName = (t: PartitionedTable, cutover: number) => `${t.table}_before_${yyyymm(cutover)}`;

export const defaultName = (t: PartitionedTable) => `${t.table}_default`;

/** A bound value as SQL: Unix seconds, or a timestamptz literal in UTC. */
export const boundSql = (t: PartitionedTable, ms: number) =>
  t.unix ? String(Math.floor(ms / 1000)) : `'${new Date(ms).toISOString()}'::timestamptz`;

/** The start (ms) of the period a partition's name gives, and its end: null for the default partition or another name. */
export function boundsOfName(t: PartitionedTable, name: string): { from: number | null; to: number } | null {
  const before = new RegExp(`^${t.table}_before_(\\d{4})(\\d{2})$`).exec(name);
  if (before) return { from: null, to: Date.UTC(Number(before[1]), Number(before[2]) - 1, 1) };
  const own = (
    t.unit === 'month' ? new RegExp(`^${t.table}_(\\d{4})(\\d{2})$`) : new RegExp(`^${t.table}_(\\d{4})$`)
  ).exec(name);
  if (!own) return null;
  const from = t.unit === 'month' ? Date.UTC(Number(own[1]), Number(own[2]) - 1, 1) : Date.UTC(Number(own[1]), 0, 1);
  return { from, to: periodAfter(from, t.unit) };
}

/** The partitions of `table` (none when it is not partitioned), by name. */
export async function partitionsOf(db: Knex | Knex.Transaction, table: string): Promise<string[]> {
  const { rows } = await db.raw(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = to_regclass(?) order by c.relname`,
    [table],
  );
  return (rows as { name: string }[]).map((r) => r.name);
}

export interface PartitionState {
  table: string;
  partitioned: boolean;
  /** whole periods covered past the one holding `now` (months: months, years: converted to months) */
  monthsAhead: number;
  /** rows in the DEFAULT partition (counted up to 1,000) */
  defaultRows: number;
}

/** The end (ms) of the contiguous coverage from `now`'s period on, by the partitions' names. */
function coveredUntil(t: PartitionedTable, names: string[], now: number): number {
  const ranges = names.map((n) => boundsOfName(t, n)).filter((r) => r !== null);
  let until = periodStart(now, t.unit);
  for (;;) {
    const next = ranges.find((r) => (r.from === null || r.from <= until) && r.to > until);
    if (!next) return until;
    until = next.to;
  }
}

/** What the alert reads: how far ahead each table's partitions go, and whether its DEFAULT partition holds rows. */
export async function partitionStates(db: Knex, now: number): Promise<PartitionState[]> {
  const out: PartitionState[] = [];
  for (const t of PARTITIONED) {
    const names = await partitionsOf(db, t.table);
    if (names.length === 0) {
      out.push({ table: t.table, partitioned: false, monthsAhead: 0, defaultRows: 0 });
      continue;
    }
    const until = coveredUntil(t, names, now);
    const start = new Date(periodStart(now, 'month'));
    const end = new Date(until);
    const months = (end.getUTCFullYear() - start.getUTCFullYear()) * 12 + end.getUTCMonth() - start.getUTCMonth() - 1;
    let defaultRows = 0;
    if (names.includes(defaultName(t))) {
      const { rows } = await db.raw(`select count(*)::int as n from (select 1 from ?? limit 1000) x`, [defaultName(t)]);
      defaultRows = rows[0].n;
    }
    out.push({ table: t.table, partitioned: true, monthsAhead: Math.max(0, months), defaultRows });
  }
  return out;
}

/**
 * Creates the partitions missing from the period holding `now` to `MONTHS_AHEAD` months after
 * it (periods before the old table's end are its own). Idempotent and safe to run twice at once:
 * each partition is made in its own short transaction under a transaction-scoped advisory lock
 * per table, with a lock timeout so that it never queues writers behind it. A new partition is
 * created as a plain empty table and then attached (ATTACH takes SHARE UPDATE EXCLUSIVE on the
 * parent: inserts go on; CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE). Attaching
 * checks the DEFAULT partition holds no row of the new period; when it does, the attach fails,
 * nothing is moved, and the alert on the DEFAULT partition's rows says so. Returns the names created.
 */
export async function ensurePartitions(
  db: Knex,
  now: number,
  monthsAhead = MONTHS_AHEAD,
  /** the first period to have (the one holding `now` by default; earlier for a measurement's empty database) */
  from = now,
): Promise<string[]> {
  const created: string[] = [];
  for (const t of PARTITIONED) {
    const names = await partitionsOf(db, t.table);
    if (names.length === 0) continue; // not partitioned (yet): its migration makes it so
    const oldEnd = names.map((n) => boundsOfName(t, n)).find((r) => r?.from === null)?.to ?? -Infinity;
    const last = periodAfter(periodStart(now, 'month'), 'month', monthsAhead);
    for (let start = periodStart(from, t.unit); start <= last; start = periodAfter(start, t.unit)) {
      const name = partitionName(t, start);
      if (start < oldEnd || names.includes(name)) continue;
      const made = await db
        .transaction(async (trx) => {
          await trx.raw(`set local lock_timeout = '1s'`);
          const { rows } = await trx.raw(`select pg_try_advisory_xact_lock(hashtext(?)) as got`, [
            `partitions:${t.table}`,
          ]);
          if (!rows[0].got) return false;
          if ((await partitionsOf(trx, t.table)).includes(name)) return false;
          // the tables whose keys reference this one first (webhook_deliveries for events): the
          // attach takes SHARE ROW EXCLUSIVE on them after locking the DEFAULT partition, which a
          // writer's key check (FOR KEY SHARE on every partition) may be waiting for while it
          // holds them: a deadlock, the writer's transaction lost. Taken first, the attach waits
          // for those writers instead.
          const { rows: referencing } = await trx.raw(
            `select distinct conrelid::regclass::text as name from pg_constraint
              where confrelid = ?::regclass and contype = 'f' and conparentid = 0`,
            [t.table],
          );
          if (referencing.length)
            await trx.raw(
              `lock table ${(referencing as { name: string }[]).map((r) => r.name).join(', ')} in share row exclusive mode`,
            );
          await trx.raw(`create table if not exists ?? (like ?? including defaults including constraints)`, [
            name,
            t.table,
          ]);
          await trx.raw(
            `alter table ?? attach partition ?? for values from (${boundSql(t, start)}) to (${boundSql(t, periodAfter(start, t.unit))})`,
            [t.table, name],
          );
          return true;
        })
        // a lock not granted within a second: given up, the next run tries again (never a writer held long)
        .catch((err: { code?: string }) => {
          if (err.code === '55P03') return false;
          throw err;
        });
      if (made) created.push(name);
    }
  }
  return created;
}
