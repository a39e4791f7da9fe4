import type { Knex } from 'knex';
import {
  beforeName,
  boundSql,
  boundsOfName,
  defaultName,
  ensurePartitions,
  partitionsOf,
  periodAfter,
  periodStart,
  type PartitionedTable,
} from './partitions';

/**
 * The online path of docs/retention.md#ten-years-of-history for an existing table: the old
 * table becomes the partition of everything before the cutover (the first instant of the month,
 * or year, after the migration runs), with no copy. Only one short transaction holds an ACCESS
 * EXCLUSIVE lock (the swap); everything that reads the whole table (the unique index, the
 * check's validation, a referencing foreign key's validation) runs beside the writes.
 */

/** A foreign key of another table that references the partitioned one: it becomes a key on two columns. */
export interface Referencing {
  table: string;
  /** the referencing columns, matched to (id, <partition key>) */
  columns: [string, string];
}

export interface OnlineReport {
  table: string;
  cutover: number;
  /** the swap transaction: from its locks granted to its commit */
  exclusiveMs: number;
  /** attempts of the swap (a lock not granted within LOCK_TIMEOUT is given up and tried again) */
  attempts: number;
}

/** Every report of this process (a test reads the swap's time); PARTITION_REPORT=1 prints each to stderr. */
export const onlineReports: OnlineReport[] = [];

/** How long the swap waits for its locks: while it waits, writers queue behind it. */
const LOCK_TIMEOUT = '500ms';
const ATTEMPTS = 40;
const MAX_IDENT = 63;

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
/** SQL text read from the catalog, run as is (knex would take a `?` in it for a binding). */
const verbatim = (db: Knex | Knex.Transaction, sql: string) => db.raw(sql.replace(/\?/g, '\\?'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lockNotGranted = (err: unknown) => (err as { code?: string }).code === '55P03';

/** Runs `work` in a transaction whose lock waits last at most LOCK_TIMEOUT, again while a lock is not granted. */
export async function withShortLocks<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<[T, number]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await knex.transaction(async (trx) => {
        await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
        return work(trx);
      });
      return [out, attempt];
    } catch (err) {
      if (!lockNotGranted(err) || attempt >= ATTEMPTS) throw err;
      await sleep(200 + Math.random() * 800);
    }
  }
}

const renamed = (name: string, from: string, to: string) =>
  (name.startsWith(from) ? to + name.slice(from.length) : `${to}_${name}`).slice(0, MAX_IDENT);

export async function partitionOnline(
  knex: Knex,
  t: PartitionedTable,
  opts: { now?: number; referencing?: Referencing[] } = {},
): Promise<OnlineReport | null> {
  if ((await partitionsOf(knex, t.table)).length > 0) return null; // done already
  const cutover = periodAfter(periodStart(opts.now ?? Date.now(), t.unit), t.unit);
  const before = beforeName(t, cutover);
  const key = `${t.table}_id_${t.column}_key`;
  const check = `${t.table}_before_cutover`;
  const referencing = opts.referencing ?? [];

  // 1. the future primary key, built beside the writes (an interrupted build leaves an invalid index: rebuilt)
  const { rows: invalid } = await knex.raw(
    `select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid`,
    [key],
  );
  if (invalid.length) await knex.raw(`drop index concurrently if exists ??`, [key]);
  await knex.raw(`create unique index concurrently if not exists ?? on ?? (id, ??)`, [key, t.table, t.column]);

  // 2. every row before the cutover: a check added NOT VALID (a moment's lock), then validated beside the writes
  await withShortLocks(knex, async (trx) => {
    await trx.raw(`alter table ?? drop constraint if exists ??`, [t.table, check]);
    await trx.raw(`alter table ?? add constraint ?? check (?? < ${boundSql(t, cutover)}) not valid`, [
      t.table,
      check,
      t.column,
    ]);
  });
  await knex.raw(`alter table ?? validate constraint ??`, [t.table, check]);

  // 3. the swap, one short transaction
  let exclusiveMs = 0;
  const [refs, attempts] = await withShortLocks(knex, async (trx) => {
    // the tables the foreign keys reference first (declaring a key takes SHARE ROW EXCLUSIVE on
    // them), in the order writers take them: a writer that holds one and waits for this table
    // would otherwise wait on the swap while the swap waits on it
    const { rows: referenced } = await trx.raw(
      `select distinct confrelid::regclass::text as name from pg_constraint
        where conrelid = '${t.table}'::regclass and contype = 'f' and confrelid <> conrelid`,
    );
    if (referenced.length)
      await trx.raw(
        `lock table ${(referenced as { name: string }[]).map((r) => r.name).join(', ')} in share row exclusive mode`,
      );
    await trx.raw(
      `lock table ${[t.table, ...referencing.map((r) => r.table)].map(ident).join(', ')} in access exclusive mode`,
    );
    const t0 = process.hrtime.bigint();
    const oid = `'${t.table}'::regclass`;
    const views = await viewsOn(trx, t.table);
    const indexes: { name: string; def: string }[] = (
      await trx.raw(
        `select c.relname as name, pg_get_indexdef(i.indexrelid) as def
           from pg_index i join pg_class c on c.oid = i.indexrelid
          where i.indrelid = ${oid} and not i.indisprimary and c.relname <> ?`,
        [key],
      )
    ).rows;
    const constraints: { name: string; type: string; def: string }[] = (
      await trx.raw(
        `select conname as name, contype as type, pg_get_constraintdef(oid) as def from pg_constraint
          where conrelid = ${oid} and contype in ('p', 'f')`,
      )
    ).rows;
    const incoming: { name: string; table: string }[] = (
      await trx.raw(
        `select conname as name, conrelid::regclass::text as "table" from pg_constraint where confrelid = ${oid} and contype = 'f'`,
      )
    ).rows;
    const sequences = await sequencesOwnedBy(trx, t.table);
    for (const r of incoming)
      if (!referencing.some((x) => x.table === r.table))
        throw new Error(`${r.table} references ${t.table} (${r.name}): say how it follows the partition key`);

    for (const r of incoming) await trx.raw(`alter table ?? drop constraint ??`, [r.table, r.name]);
    const pk = constraints.find((c) => c.type === 'p');
    if (pk) await trx.raw(`alter table ?? drop constraint ??`, [t.table, pk.name]);
    await trx.raw(`alter table ?? add constraint ?? primary key using index ??`, [t.table, `${before}_pkey`, key]);
    await trx.raw(`alter table ?? rename to ??`, [t.table, before]);
    for (const i of indexes) await trx.raw(`alter index ?? rename to ??`, [i.name, renamed(i.name, t.table, before)]);

    await trx.raw(`create table ?? (like ?? including defaults including constraints) partition by range (??)`, [
      t.table,
      before,
      t.column,
    ]);
    await trx.raw(`alter table ?? drop constraint ??`, [t.table, check]);
    await trx.raw(`alter table ?? add constraint ?? primary key (id, ??)`, [t.table, `${t.table}_pkey`, t.column]);
    // the old definitions, which name the table: they now create the parent's (partitioned) indexes
    for (const i of indexes) await verbatim(trx, i.def);
    for (const c of constraints.filter((c) => c.type === 'f'))
      await verbatim(trx, `alter table ${ident(t.table)} add constraint ${ident(c.name)} ${c.def}`);
    // each parent index and key finds its twin on the old table: attached, nothing built or scanned
    await trx.raw(`alter table ?? attach partition ?? for values from (minvalue) to (${boundSql(t, cutover)})`, [
      t.table,
      before,
    ]);
    await trx.raw(`create table ?? partition of ?? default`, [defaultName(t), t.table]);
    for (const s of sequences) await trx.raw(`alter sequence ${s.name} owned by ??.id`, [t.table]);
    // a view is bound to the table, not to its name: recreated, it reads the parent
    for (const v of views) await verbatim(trx, `create or replace view ${v.name} as ${v.def}`);
    for (const r of incoming) {
      const spec = referencing.find((x) => x.table === r.table)!;
      await trx.raw(`alter table ?? add constraint ?? foreign key (??, ??) references ?? (id, ??) not valid`, [
        r.table,
        r.name,
        ...spec.columns,
        t.table,
        t.column,
      ]);
    }
    exclusiveMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return incoming;
  });

  // 4. beside the writes: the re-pointed keys validated, the parent's statistics, the coming periods
  for (const r of refs) await knex.raw(`alter table ?? validate constraint ??`, [r.table, r.name]);
  await knex.raw(`analyze ??`, [t.table]);
  await ensurePartitions(knex, opts.now ?? Date.now());
  const report = { table: t.table, cutover, exclusiveMs, attempts };
  onlineReports.push(report);
  if (process.env.PARTITION_REPORT) process.stderr.write(`${JSON.stringify(report)}\n`);
  return report;
}

/**
 * The way back, for a database that has just run `partitionOnline` (a migration's down): the old
 * table is detached, the rows written since the cutover (in the later partitions) copied into it,
 * the parent dropped, and names, primary key, sequence, views and referencing keys put back.
 * The copy is of the rows since the cutover only, but it runs under the lock: a down is for a
 * database rolled back soon after, not a month of rows later.
 */
export async function unpartitionOnline(knex: Knex, t: PartitionedTable, referencing: Referencing[] = []) {
  const names = await partitionsOf(knex, t.table);
  const before = names.find((n) => boundsOfName(t, n)?.from === null);
  if (!before) return;
  const idKey = `${t.table}_id_key`;
  await knex.raw(`create unique index concurrently if not exists ?? on ?? (id)`, [idKey, before]);
  await withShortLocks(knex, async (trx) => {
    await trx.raw(
      `lock table ${[t.table, ...referencing.map((r) => r.table)].map(ident).join(', ')} in access exclusive mode`,
    );
    const oid = `'${t.table}'::regclass`;
    const views = await viewsOn(trx, t.table);
    // the old table's indexes get back the names of the parent's indexes they are attached to
    const indexNames: { child: string; parent: string }[] = (
      await trx.raw(
        `select c.relname as child, p.relname as parent from pg_inherits i
           join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
           join pg_index x on x.indexrelid = c.oid
          where x.indrelid = ?::regclass and not x.indisprimary`,
        [before],
      )
    ).rows;
    const incoming: { name: string; table: string }[] = (
      await trx.raw(
        `select conname as name, conrelid::regclass::text as "table" from pg_constraint
          where confrelid = ${oid} and contype = 'f' and conparentid = 0`,
      )
    ).rows;
    const sequences = await sequencesOwnedBy(trx, t.table);
    for (const r of incoming) await trx.raw(`alter table ?? drop constraint ??`, [r.table, r.name]);
    for (const v of views) await trx.raw(`drop view ${v.name}`);
    await trx.raw(`alter table ?? detach partition ??`, [t.table, before]);
    await trx.raw(`alter table ?? drop constraint if exists ??`, [before, `${t.table}_before_cutover`]);
    await trx.raw(`insert into ?? select * from ??`, [before, t.table]);
    for (const s of sequences) await trx.raw(`alter sequence ${s.name} owned by ??.id`, [before]);
    await trx.raw(`drop table ??`, [t.table]);
    await trx.raw(`alter table ?? rename to ??`, [before, t.table]);
    for (const i of indexNames) await trx.raw(`alter index ?? rename to ??`, [i.child, i.parent]);
    await trx.raw(`alter table ?? drop constraint ??`, [t.table, `${before}_pkey`]);
    await trx.raw(`alter table ?? add constraint ?? primary key using index ??`, [t.table, `${t.table}_pkey`, idKey]);
    for (const v of views) await verbatim(trx, `create view ${v.name} as ${v.def}`);
    for (const r of incoming) {
      const spec = referencing.find((x) => x.table === r.table)!;
      await trx.raw(`alter table ?? add constraint ?? foreign key (??) references ?? (id) not valid`, [
        r.table,
        r.name,
        spec.columns[0],
        t.table,
      ]);
    }
  });
  for (const r of referencing) {
    const { rows } = await knex.raw(
      `select conname from pg_constraint where conrelid = ?::regclass and confrelid = ?::regclass and not convalidated`,
      [r.table, t.table],
    );
    for (const c of rows as { conname: string }[])
      await knex.raw(`alter table ?? validate constraint ??`, [r.table, c.conname]);
  }
}

/** The views that read `table`, with their definitions (to drop and declare again around a swap). */
async function viewsOn(trx: Knex.Transaction, table: string): Promise<{ name: string; def: string }[]> {
  const { rows } = await trx.raw(
    `select distinct v.oid::regclass::text as name, pg_get_viewdef(v.oid) as def
       from pg_depend d join pg_rewrite r on r.oid = d.objid join pg_class v on v.oid = r.ev_class
      where d.classid = 'pg_rewrite'::regclass and d.refobjid = ?::regclass and v.oid <> ?::regclass`,
    [table, table],
  );
  return rows;
}

/** The sequences `table` owns (its serial columns'), which follow the table that keeps the rows. */
async function sequencesOwnedBy(trx: Knex.Transaction, table: string): Promise<{ name: string }[]> {
  const { rows } = await trx.raw(
    `select s.oid::regclass::text as name from pg_depend d join pg_class s on s.oid = d.objid
      where d.refobjid = ?::regclass and d.deptype = 'a' and s.relkind = 'S'`,
    [table],
  );
  return rows;
}
