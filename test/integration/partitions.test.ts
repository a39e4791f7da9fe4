import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { SERVER_URL } from '../../scripts/lib/databases';
import { createDb, type Db } from '../../shared/db/knex';
import { onlineReports } from '../../shared/db/partitionOnline';
import { ensurePartitions, partitionStates, PARTITIONED } from '../../shared/db/partitions';
import { runLedgerCheck } from '../../shared/ledger/check';

/**
 * The online path of docs/retention.md#ten-years-of-history on an existing database: a database
 * migrated up to just before the partitioning migrations, filled with months of history by
 * `db:fill-history`, then migrated while writers insert (a status change, a ledger transaction of
 * 2 entries, an event and its delivery per statement): every row is still there, the tables are
 * partitioned with the old table as the MINVALUE partition, new rows land in their month, the
 * keys hold, the view answers as before, and no write waited a second. Then the way back (down).
 */

const ROOT = path.join(__dirname, '..', '..');
const MIGRATIONS = path.join(ROOT, 'shared', 'db', 'migrations');
const FIRST = '20261201000100_partition_ledger_entries.ts';
const MIGRATION_OPTIONS = { directory: MIGRATIONS, loadExtensions: ['.ts'] };

/** Count and checksum of a table's rows (the writers' rows left out), and of the balances view. */
const SNAPSHOTS: Record<string, string> = {
  payment_status_changes: `select count(*)::int as n, md5(string_agg(t::text, ',' order by id)) as sum
                             from payment_status_changes t where reason <> 'concurrent'`,
  ledger_entries: `select count(*)::int as n, md5(string_agg(e::text, ',' order by e.id)) as sum from ledger_entries e
                    where not exists (select 1 from ledger_transactions t where t.id = e.transaction_id and t.kind = 'concurrent')`,
  events: `select count(*)::int as n, md5(string_agg(t::text, ',' order by id)) as sum from events t where type <> 'concurrent'`,
  webhook_deliveries: `select count(*)::int as n, md5(string_agg(concat_ws('|', d.id, d.event_id, d.webhook_id, d.status, d.created), ',' order by d.id)) as sum
                         from webhook_deliveries d join events e on e.id = d.event_id where e.type <> 'concurrent'`,
  ledger_balances: `select count(*)::int as n, md5(string_agg(b::text, ',' order by id)) as sum from ledger_balances b`,
};

const WRITE = `with
  h as (insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
        values ($1, 'succeeded', 'succeeded', 'concurrent', now())),
  lt as (insert into ledger_transactions (id, kind, reference_id, environment, currency)
         values (gen_random_uuid(), 'concurrent', gen_random_uuid()::text, 'live', 'USD') returning id),
  le as (insert into ledger_entries (transaction_id, account_id, amount) select lt.id, $2, v.x from lt, (values (5), (-5)) v(x)),
  e as (insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
        values ($3, $4, 'live', 'concurrent', $5, 1, $6, '{}')),
  d as (insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
        values ('whd_' || gen_random_uuid(), $3, $7, $6, 0))
  select 1`;

function run(cmd: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')}: ${code}\n${out}`)),
    );
  });
}

describe('history partitions: the online migration of an existing database', function () {
  this.timeout(300_000);
  const name = `svc_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = `${SERVER_URL}/${name}`;
  let admin: Db;
  let db: Db;
  const initial: Record<string, { n: number; sum: string }> = {};
  const waits: number[] = [];
  let written = 0;

  const snapshot = async () => {
    const out: Record<string, { n: number; sum: string }> = {};
    for (const [t, sql] of Object.entries(SNAPSHOTS)) out[t] = (await db.raw(sql)).rows[0];
    return out;
  };
  const partitionOf = async (table: string, where: string) =>
    (await db.raw(`select tableoid::regclass::text as p from ${table} where ${where}`)).rows.map(
      (r: { p: string }) => r.p,
    );

  before(async () => {
    admin = createDb(`${SERVER_URL}/postgres`, 1);
    await admin.raw('create database ??', [name]);
    db = createDb(url, 2);
    // every migration before the partitioning ones
    for (;;) {
      const [, pending] = (await db.migrate.list(MIGRATION_OPTIONS)) as [unknown[], { file: string }[]];
      if (pending.length === 0 || pending[0].file === FIRST) break;
      await db.migrate.up(MIGRATION_OPTIONS);
    }
    // about 6 months of history: 15,000 rows in the four tables
    await run(
      process.execPath,
      ['--import', 'tsx', 'scripts/fill-history.ts', '--rows', '15000', '--years', '0.5', '--merchants', '10'],
      {
        DATABASE_URL: url,
      },
    );
    Object.assign(initial, await snapshot());
  });

  after(async () => {
    await db?.destroy();
    await admin?.raw('drop database if exists ?? with (force)', [name]);
    await admin?.destroy();
  });

  it('starts from unpartitioned tables holding several months', async () => {
    const { rows } = await db.raw(
      `select count(distinct date_trunc('month', created_at))::int as months from ledger_entries`,
    );
    expect(rows[0].months).to.be.at.least(5);
    expect((await db.raw(`select count(*)::int as n from pg_partitioned_table`)).rows[0].n).to.equal(0);
    for (const t of ['ledger_entries', 'payment_status_changes', 'events'])
      expect(initial[t].n, t).to.be.greaterThan(1000);
  });

  it('migrates while writers insert: none waits a second, the exclusive step is short', async () => {
    const { rows: ids } = await db.raw(
      `select (select id from payments limit 1) as payment, (select id from ledger_accounts where owner = 'platform' limit 1) as account,
              (select id from merchants where id in (select merchant_id from webhooks) limit 1) as merchant`,
    );
    const { rows: hooks } = await db.raw(`select id from webhooks where merchant_id = ?`, [ids[0].merchant]);
    let stop = false;
    const writer = async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        while (!stop) {
          const object = `pay_${randomUUID()}`;
          const created = Math.floor(Date.now() / 1000);
          const event = `evt_${object.slice(4)}_${created}_${randomBytes(4).toString('hex')}`;
          const t0 = process.hrtime.bigint();
          await c.query(WRITE, [ids[0].payment, ids[0].account, event, ids[0].merchant, object, created, hooks[0].id]);
          waits.push(Number(process.hrtime.bigint() - t0) / 1e6);
          written++;
          await new Promise((r) => setTimeout(r, 5));
        }
      } finally {
        await c.end();
      }
    };
    const writers = [writer(), writer(), writer()];
    await new Promise((r) => setTimeout(r, 300));
    const reports = onlineReports.length;
    try {
      await db.migrate.latest(MIGRATION_OPTIONS);
    } finally {
      await new Promise((r) => setTimeout(r, 300));
      stop = true;
      await Promise.all(writers);
    }
    const swaps = onlineReports.slice(reports);
    expect(swaps.map((s) => s.table)).to.deep.equal(['ledger_entries', 'payment_status_changes', 'events']);
    console.log(
      `      swap (ACCESS EXCLUSIVE) per table: ${swaps.map((s) => `${s.table} ${s.exclusiveMs.toFixed(1)} ms`).join(', ')}; ` +
        `${written} concurrent writes, the slowest ${Math.max(...waits).toFixed(0)} ms`,
    );
    for (const s of swaps) expect(s.exclusiveMs, s.table).to.be.below(1000);
    expect(written).to.be.greaterThan(10);
    expect(Math.max(...waits)).to.be.below(1000);
  });

  it('keeps every row, and the balances view answers as before', async () => {
    expect(await snapshot()).to.deep.equal(initial);
    const { rows } = await db.raw(`select count(*)::int as n from payment_status_changes where reason = 'concurrent'`);
    expect(rows[0].n).to.equal(written);
  });

  it('partitions the three tables, the old table being the MINVALUE partition, a DEFAULT one and 12 months ahead', async () => {
    const { rows } = await db.raw(
      `select c.relname from pg_partitioned_table p join pg_class c on c.oid = p.partrelid order by 1`,
    );
    expect(rows.map((r: { relname: string }) => r.relname)).to.deep.equal([
      'events',
      'ledger_entries',
      'payment_status_changes',
    ]);
    for (const t of PARTITIONED) {
      const { rows: parts } = await db.raw(
        `select c.relname, pg_get_expr(c.relpartbound, c.oid) as bound from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = ?::regclass`,
        [t.table],
      );
      const old = parts.filter((p: { bound: string }) => p.bound.includes('MINVALUE'));
      expect(old, t.table).to.have.length(1);
      expect(old[0].relname).to.match(new RegExp(`^${t.table}_before_\\d{6}$`));
      expect(parts.some((p: { bound: string }) => p.bound === 'DEFAULT')).to.equal(true);
      // every old row is in the old table itself
      const { rows: n } = await db.raw(`select count(*)::int as n from only ??`, [old[0].relname]);
      expect(n[0].n).to.be.at.least(initial[t.table].n);
    }
    const states = await partitionStates(db, Date.now());
    for (const s of states) {
      expect(s.monthsAhead, s.table).to.be.at.least(11);
      expect(s.defaultRows, s.table).to.equal(0);
    }
    // the maintenance finds nothing to do, twice at once
    expect(await Promise.all([ensurePartitions(db, Date.now()), ensurePartitions(db, Date.now())])).to.deep.equal([
      [],
      [],
    ]);
  });

  it('puts a new row in the partition of its month (year for events), an old one in the old table', async () => {
    const next = new Date();
    next.setUTCMonth(next.getUTCMonth() + 2, 15);
    const yyyymm = `${next.getUTCFullYear()}${String(next.getUTCMonth() + 1).padStart(2, '0')}`;
    const { rows: p } = await db.raw(`select id from payments limit 1`);
    await db.raw(
      `insert into payment_status_changes (payment_id, from_status, to_status, reason, at) values (?, 'succeeded', 'succeeded', 'later', ?)`,
      [p[0].id, next],
    );
    expect(await partitionOf('payment_status_changes', `reason = 'later'`)).to.deep.equal([
      `payment_status_changes_${yyyymm}`,
    ]);
    const [old] = await partitionOf('payment_status_changes', `reason = 'concurrent' limit 1`);
    expect(old).to.match(/^payment_status_changes_before_\d{6}$/);
    const { rows: acc } = await db.raw(`select id from ledger_accounts where owner = 'platform' limit 1`);
    const tx = randomUUID();
    await db.raw(
      `with lt as (insert into ledger_transactions (id, kind, reference_id, environment, currency) values (?, 'later', ?, 'live', 'USD') returning id)
       insert into ledger_entries (transaction_id, account_id, amount, created_at) select lt.id, ?, v.x, ? from lt, (values (7), (-7)) v(x)`,
      [tx, tx, acc[0].id, next],
    );
    expect(await partitionOf('ledger_entries', `transaction_id = '${tx}'`)).to.deep.equal([
      `ledger_entries_${yyyymm}`,
      `ledger_entries_${yyyymm}`,
    ]);
    // far beyond the partitions made: the DEFAULT partition takes it (an insert never fails), and the gauge says so
    const far = new Date(Date.UTC(next.getUTCFullYear() + 3, 0, 10));
    await db.raw(
      `insert into payment_status_changes (payment_id, from_status, to_status, reason, at) values (?, 'succeeded', 'succeeded', 'far', ?)`,
      [p[0].id, far],
    );
    expect(await partitionOf('payment_status_changes', `reason = 'far'`)).to.deep.equal([
      'payment_status_changes_default',
    ]);
    expect(
      (await partitionStates(db, Date.now())).find((s) => s.table === 'payment_status_changes')!.defaultRows,
    ).to.equal(1);
    await db.raw(`delete from payment_status_changes where reason = 'far'`);
    const { rows: m } = await db.raw(`select merchant_id, id from payments limit 1`);
    // 15 January next year: past the events' cutover (next 1 January), in the yearly partition made with it
    const created = Math.floor(Date.UTC(new Date().getUTCFullYear() + 1, 0, 15) / 1000);
    const event = `evt_${m[0].id.slice(4)}_${created}_0badc0de`;
    await db.raw(
      `insert into events (id, merchant_id, environment, type, object_id, object_version, created, body) values (?, ?, 'live', 'later', ?, 1, ?, '{}')`,
      [event, m[0].merchant_id, m[0].id, created],
    );
    expect(await partitionOf('events', `id = '${event}'`)).to.deep.equal([
      `events_${new Date(created * 1000).getUTCFullYear()}`,
    ]);
  });

  it('keeps the keys: a delivery of a missing event is refused, of a present one taken with its event_created', async () => {
    const { rows: w } = await db.raw(`select id from webhooks limit 1`);
    const { rows: e } = await db.raw(`select id, created from events where type <> 'concurrent' limit 1`);
    const missing = `evt_${randomUUID()}_${e[0].created}_00000000`;
    let err: { code?: string } | undefined;
    try {
      await db.raw(`insert into webhook_deliveries (id, event_id, webhook_id, created) values (?, ?, ?, 1)`, [
        `whd_${randomUUID()}`,
        missing,
        w[0].id,
      ]);
    } catch (e) {
      err = e as { code?: string };
    }
    expect(err?.code).to.equal('23503');
    const id = `whd_${randomUUID()}`;
    await db.raw(
      `insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery) values (?, ?, ?, 1, 9)`,
      [id, e[0].id, w[0].id],
    );
    const { rows } = await db.raw(`select event_created from webhook_deliveries where id = ?`, [id]);
    expect(rows[0].event_created).to.equal(Number(e[0].created));
    await db.raw(`delete from webhook_deliveries where id = ?`, [id]);
    // an entry of a missing transaction, a status change of a missing payment: refused as before
    for (const sql of [
      `insert into ledger_entries (transaction_id, account_id, amount) values ('${randomUUID()}', 1, 1)`,
      `insert into payment_status_changes (payment_id, to_status, reason) values ('pay_${randomUUID()}', 'pending', 'x')`,
    ]) {
      const e2 = await db.raw(sql).then(
        () => undefined,
        (x: { code?: string }) => x,
      );
      expect(e2?.code, sql).to.equal('23503');
    }
  });

  it('the ledger check agrees, incremental and full', async () => {
    const full = await runLedgerCheck(db, { full: true });
    const first = await runLedgerCheck(db);
    expect(first.problems).to.deep.equal(full.problems);
    expect(first.monthsKept.length).to.be.at.least(4);
  });

  it('goes back (down): unpartitioned tables with every row, the old keys, the view', async () => {
    // the rows after the cutover written above: back in the old table they would stop its
    // check (< cutover) from holding when going up again
    await db.raw(`delete from payment_status_changes where reason = 'later'`);
    await db.raw(
      `delete from ledger_entries where transaction_id in (select id from ledger_transactions where kind = 'later')`,
    );
    await db.raw(`delete from ledger_transactions where kind = 'later'`);
    await db.raw(`delete from events where type = 'later'`);
    const now = await snapshot();
    // every migration from the first partitioning one on (later ones too) goes down
    while (Number(await db.migrate.currentVersion(MIGRATION_OPTIONS)) >= 20261201000100)
      await db.migrate.down(MIGRATION_OPTIONS);
    expect((await db.raw(`select count(*)::int as n from pg_partitioned_table`)).rows[0].n).to.equal(0);
    expect(await snapshot()).to.deep.equal(now);
    const { rows } = await db.raw(
      `select pg_get_constraintdef(oid) as def from pg_constraint where conname = 'webhook_deliveries_event_id_foreign'`,
    );
    expect(rows[0].def).to.equal('FOREIGN KEY (event_id) REFERENCES events(id)');
    const { rows: pk } = await db.raw(
      `select pg_get_constraintdef(oid) as def from pg_constraint where conname in ('ledger_entries_pkey', 'events_pkey', 'payment_status_changes_pkey') order by conname`,
    );
    expect(pk.map((r: { def: string }) => r.def)).to.deep.equal(Array(3).fill('PRIMARY KEY (id)'));
    // and up again
    await db.migrate.latest(MIGRATION_OPTIONS);
    expect(await snapshot()).to.deep.equal(now);
    expect((await db.raw(`select count(*)::int as n from pg_partitioned_table`)).rows[0].n).to.equal(3);
  });
});
