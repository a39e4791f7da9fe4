import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { createDb } from '../shared/db/knex';
import { runLedgerCheck } from '../shared/ledger/check';
import { PARTITIONED } from '../shared/db/partitions';
import { LINE, STATEMENT_KINDS } from '../shared/db/sql/statements';

/**
 * `npm run db:measure-history [-- --json out.json] [-- --inserts 1000]`: the figures of
 * docs/retention.md#ten-years-of-history at the current size of `DATABASE_URL`'s history
 * tables (filled by `npm run db:fill-history`). It writes to the database (the inserts it times,
 * the update churn): a scratch database only.
 *
 * 1. VACUUM ANALYZE of the history tables (autovacuum is off on the measuring instance).
 * 2. The list queries, for the heaviest merchant, as the service sends them: GET /v1/balance, GET /v1/payments and
 *    GET /v1/events (shared/db/pagination.ts: newest first, 21 rows), first page and a deep page
 *    (a cursor in the middle of the merchant's history), and a settlement's transactions
 *    (shared/db/sql/statements.ts) first page and after a cursor in its middle. EXPLAIN ANALYZE's
 *    planning + execution time, the median of 5 runs (warm), and the buffers read.
 * 3. The writer's kind of insert (shared/operations/writer.ts `change`): one statement writing a
 *    status change, a ledger transaction of 3 entries, an event and a delivery, `--inserts` times,
 *    one transaction each, p50 and p99. `synchronous_commit = off` in this session: the figure
 *    is the statement's work (index descents, pages touched), not the WAL flush of the commit,
 *    which does not depend on the tables' size and would measure the disk.
 * 4. `npm run ledger:check`'s function (shared/ledger/check.ts), timed: `--full`, and where the
 *    schema has the incremental check's tables, its first run (every month read, the closed
 *    ones kept) and a second run (the open month read).
 * 5. Plain VACUUM of each history table with nothing deleted, then a 1 % update churn (one
 *    column set to itself: a new version of the row, the old one dead) and VACUUM again, twice:
 *    on the newest 1 % of the rows (the last pages of the heap: what production updates, the
 *    recent rows) and on 1 % picked at random across the ten years. The times of each update
 *    and of the VACUUM after it. On a partitioned table (shared/db/partitions.ts) the sizes are
 *    its partitions' sums, VACUUM names the parent (every partition), and the newest 1 % are the
 *    rows of the newest partition-key values (a partitioned parent has no pages of its own).
 */

const HISTORY = [
  { table: 'payment_status_changes', churn: 'from_status = from_status' },
  { table: 'ledger_entries', churn: 'amount = amount' },
  { table: 'ledger_transactions', churn: 'currency = currency' },
  { table: 'events', churn: 'redeliveries = redeliveries' },
  { table: 'webhook_deliveries', churn: 'attempts = attempts' },
] as const;

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

interface Figure {
  figure: string;
  value: number;
  unit: string;
  note?: string;
}

async function timed(db: pg.Client, sql: string, params: unknown[] = []): Promise<number> {
  const t0 = process.hrtime.bigint();
  await db.query(sql, params);
  return ms(t0);
}

/** EXPLAIN ANALYZE of a query 5 times: median planning + execution ms, and the shared buffers of the last run. */
async function explain(db: pg.Client, sql: string, params: unknown[]): Promise<{ ms: number; buffers: number }> {
  const times: number[] = [];
  let buffers = 0;
  for (let i = 0; i < 5; i++) {
    const { rows } = await db.query<{
      'QUERY PLAN': [{ Plan: Record<string, number>; 'Planning Time': number; 'Execution Time': number }];
    }>(`explain (analyze, buffers, format json) ${sql}`, params);
    const plan = rows[0]['QUERY PLAN'][0];
    times.push(plan['Planning Time'] + plan['Execution Time']);
    buffers = (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0);
  }
  return { ms: median(times), buffers };
}

// GET /v1/payments and GET /v1/events as objection sends them (shared/payments/read.ts,
// shared/events/read.ts, pageQuery)
const PAYMENTS = `select "payments".* from "payments" where "merchant_id" = $1 and "environment" = $2`;
const EVENTS = `select "id", "type", "created", "object_version", "body" from "events" where "merchant_id" = $1 and "environment" = $2`;
const PAGE = ` order by "created" desc, "id" desc limit 21`;
const AFTER = ` and (created, id) < ($3, $4)`;
// a settlement's transactions: the service's own line (shared/db/sql/statements.ts settlementPage)
const LINES = `${LINE}
   where t.settlement_id = $1 and t.kind in ${STATEMENT_KINDS}`;
const LINES_PAGE = ` order by t.created_at desc, t.id desc limit $2`;
const LINES_AFTER = ` and (t.created_at, t.id) < (select c.created_at, c.id from ledger_transactions c where c.id = $3::uuid)`;

// GET /v1/balance (shared/ledger/balance.ts): the merchant's accounts through the ledger_balances view
const BALANCE = `select "kind", "currency", balance::text as balance from "ledger_balances"
  where "owner" = $1 and "environment" = $2 and "kind" in ('available', 'in_transit')`;

/** The writer's `change` statement reduced to its inserts: history row, ledger transaction and entries, event, delivery. */
const WRITE = `with
  h as (insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
        values ($1, 'succeeded', 'succeeded', 'measure', clock_timestamp())),
  lt as (insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
         values ($2::uuid, 'payment_credit', 'pay_' || $2, 'live', 'USD', $3) on conflict (kind, reference_id) do nothing returning id),
  le as (insert into ledger_entries (transaction_id, account_id, amount, unfolded)
         select lt.id, x.account_id, x.amount, x.unfolded from lt
           cross join (values ($4::bigint, -1000::bigint, false), ($5::bigint, 980::bigint, true), ($6::bigint, 20::bigint, false))
                   as x(account_id, amount, unfolded)),
  e as (insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
        values ($7, $3, 'live', 'payment.succeeded', $1, 4, $10::bigint, $8::jsonb)),
  d as (insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
        values ('whd_' || gen_random_uuid(), $7, $9, $10::bigint, 0))
  select 1`;

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL names the scratch database to measure');
  const inserts = Number(option('inserts') ?? 1000);
  const figures: Figure[] = [];
  const add = (figure: string, value: number, unit = 'ms', note?: string) => {
    figures.push({ figure, value, unit, note });
    process.stderr.write(`${figure}: ${value.toFixed(unit === 'ms' ? 1 : 0)} ${unit}${note ? ` (${note})` : ''}\n`);
  };
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query('set synchronous_commit = off');
    // 1. VACUUM ANALYZE
    for (const { table } of HISTORY)
      add(`VACUUM ANALYZE ${table} (before measuring)`, await timed(db, `vacuum analyze ${table}`));
    await db.query('vacuum analyze payments, settlements, ledger_accounts');
    const { rows: sizes } = await db.query<{ relname: string; rows: string; bytes: string; parts: number }>(
      `select c.relname, (sum(greatest(p.reltuples, 0)) filter (where p.relkind = 'r'))::bigint as rows, sum(pg_total_relation_size(p.oid)) as bytes,
              count(*) filter (where p.relkind = 'r' and p.oid <> c.oid)::int as parts
         from pg_class c left join lateral pg_partition_tree(c.oid) t on true join pg_class p on p.oid = coalesce(t.relid, c.oid)
        where (c.relname = any($1::text[]) or c.relname in ('payments', 'settlements')) and c.relkind in ('r', 'p')
        group by c.relname order by c.relname`,
      [HISTORY.map((h) => h.table)],
    );
    let total = 0;
    for (const s of sizes) {
      if (HISTORY.some((h) => h.table === s.relname)) total += Number(s.rows);
      const parts = s.parts ? `, ${s.parts} partitions` : '';
      add(
        `rows ${s.relname}`,
        Number(s.rows),
        'rows',
        `${(Number(s.bytes) / 2 ** 30).toFixed(2)} GiB with indexes${parts}`,
      );
    }
    add(
      'rows of the four history tables (ledger transactions apart)',
      total - Number(sizes.find((s) => s.relname === 'ledger_transactions')?.rows ?? 0),
      'rows',
    );

    // 2. the list queries, for the heaviest merchant
    const { rows: heavy } = await db.query<{ merchant_id: string }>(
      `select merchant_id from payments tablesample system (1) group by merchant_id order by count(*) desc limit 1`,
    );
    const merchant = heavy[0].merchant_id;
    const { rows: span } = await db.query<{ lo: string; hi: string }>(
      `select (select created from payments where merchant_id = $1 and environment = 'live' order by created limit 1) as lo,
              (select created from payments where merchant_id = $1 and environment = 'live' order by created desc limit 1) as hi`,
      [merchant],
    );
    const mid = Math.floor((Number(span[0].lo) + Number(span[0].hi)) / 2);
    const { rows: pc } = await db.query<{ created: string; id: string }>(
      `${PAYMENTS} and created < $3 order by created desc, id desc limit 1`,
      [merchant, 'live', mid],
    );
    const { rows: ec } = await db.query<{ created: string; id: string }>(
      `${EVENTS} and created < $3 order by created desc, id desc limit 1`,
      [merchant, 'live', mid],
    );
    const lists: [string, string, unknown[]][] = [
      ['GET /v1/balance (ledger_balances)', BALANCE, [merchant, 'live']],
      ['GET /v1/payments first page', PAYMENTS + PAGE, [merchant, 'live']],
      [
        'GET /v1/payments deep page (mid-history cursor)',
        PAYMENTS + AFTER + PAGE,
        [merchant, 'live', pc[0].created, pc[0].id],
      ],
      ['GET /v1/events first page', EVENTS + PAGE, [merchant, 'live']],
      [
        'GET /v1/events deep page (mid-history cursor)',
        EVENTS + AFTER + PAGE,
        [merchant, 'live', ec[0].created, ec[0].id],
      ],
    ];
    const { rows: stl } = await db.query<{ id: string; count: number }>(
      `select id, count from settlements where merchant_id = $1 and environment = 'live' and created < $2
        order by created desc, id desc limit 1`,
      [merchant, mid],
    );
    if (stl.length) {
      const { rows: lc } = await db.query<{ id: string }>(
        `select id::text from ledger_transactions where settlement_id = $1 order by created_at desc, id desc offset $2 limit 1`,
        [stl[0].id, Math.floor(stl[0].count / 2)],
      );
      lists.push([`settlement transactions first page (${stl[0].count} in it)`, LINES + LINES_PAGE, [stl[0].id, 21]]);
      if (lc.length)
        lists.push([
          'settlement transactions after a mid cursor',
          LINES + LINES_AFTER + LINES_PAGE,
          [stl[0].id, 21, lc[0].id],
        ]);
    }
    for (const [name, sql, params] of lists) {
      const r = await explain(db, sql, params);
      add(name, r.ms, 'ms', `${r.buffers} buffers`);
    }

    // 3. the writer's kind of insert
    const { rows: targets } = await db.query<{
      id: string;
      merchant_id: string;
      webhook_id: string;
      available: string;
    }>(
      `select p.id, p.merchant_id, w.id as webhook_id, a.id as available
         from (select id, merchant_id from payments tablesample system (1) limit $1) p
         join webhooks w on w.merchant_id = p.merchant_id and w.environment = 'live'
         join ledger_accounts a on a.owner = p.merchant_id and a.environment = 'live' and a.currency = 'USD' and a.kind = 'available'`,
      [inserts],
    );
    const { rows: platform } = await db.query<{ kind: string; id: string }>(
      `select kind, id from ledger_accounts where owner = 'platform' and environment = 'live' and currency = 'USD'`,
    );
    const clearing = platform.find((a) => a.kind === 'provider_clearing')!.id;
    const fees = platform.find((a) => a.kind === 'fees')!.id;
    const times: number[] = [];
    for (const t of targets) {
      const tx = randomUUID();
      // an event's created is the seconds in its id (shared/ids.ts)
      const created = Math.floor(Date.now() / 1000);
      const eventId = `evt_${t.id.slice(4)}_${created}_${tx.slice(0, 8)}`;
      const body = JSON.stringify({
        id: eventId,
        type: 'payment.succeeded',
        data: { object: { id: t.id, object: 'payment' } },
      });
      const t0 = process.hrtime.bigint();
      await db.query({
        name: 'write',
        text: WRITE,
        values: [t.id, tx, t.merchant_id, clearing, t.available, fees, eventId, body, t.webhook_id, created],
      });
      times.push(ms(t0));
    }
    add(`insert (writer's kind) p50, ${times.length} single-row transactions`, percentile(times, 50));
    add(`insert (writer's kind) p99`, percentile(times, 99));

    // 4. ledger:check, full; incremental twice where the schema has it
    const knex = createDb(url, 1);
    try {
      const check = async (name: string, full: boolean) => {
        const t0 = process.hrtime.bigint();
        const r = await runLedgerCheck(knex, { full });
        const verdict = r.problems.length ? `${r.problems.length} problems` : 'balanced';
        add(name, ms(t0), 'ms', `${verdict}, ${r.monthsRead.length} months read, ${r.monthsKept.length} kept`);
      };
      await check('ledger:check --full', true);
      const { rows: incremental } = await db.query(`select to_regclass('ledger_check_months') is not null as has`);
      if (incremental[0].has) {
        await db.query('truncate ledger_check_months cascade');
        await check('ledger:check incremental, first run', false);
        await check('ledger:check incremental, next run', false);
      }
    } finally {
      await knex.destroy();
    }

    // 5. VACUUM: nothing deleted, then after a 1 % update churn
    for (const { table } of HISTORY) add(`VACUUM ${table} (nothing deleted)`, await timed(db, `vacuum ${table}`));
    for (const { table, churn } of HISTORY) {
      const { rows: pages } = await db.query<{ n: number; kind: string }>(
        `select relpages as n, relkind as kind from pg_class where relname = $1`,
        [table],
      );
      const key = PARTITIONED.find((p) => p.table === table)?.column;
      let newest: string;
      if (pages[0].kind === 'p' && key) {
        // partitioned: the rows of the newest 1 % of key values (the newest partitions)
        const { rows: cut } = await db.query(
          `select ${key}::text as v from ${table} order by ${key} desc offset (select count(*) / 100 from ${table}) limit 1`,
        );
        newest = `${key} >= '${cut[0].v}'`;
      } else {
        // the newest 1 %: the last 1 % of the heap's pages (the fill appends in time order), found by a TID range scan
        newest = `ctid >= '(${Math.floor(pages[0].n * 0.99)},0)'`;
      }
      add(`1% update churn, newest rows, ${table}`, await timed(db, `update ${table} set ${churn} where ${newest}`));
      add(`VACUUM ${table} (after newest-1% churn)`, await timed(db, `vacuum ${table}`));
      add(
        `1% update churn, random rows, ${table}`,
        await timed(db, `update ${table} set ${churn} where random() < 0.01`),
      );
      add(`VACUUM ${table} (after random-1% churn)`, await timed(db, `vacuum ${table}`));
    }
  } finally {
    await db.end();
  }
  const out = option('json');
  if (out) writeFileSync(out, JSON.stringify(figures, null, 2));
  process.stdout.write('| figure | value | note |\n| --- | ---: | --- |\n');
  for (const f of figures)
    process.stdout.write(`| ${f.figure} | ${f.value.toFixed(f.unit === 'ms' ? 1 : 0)} ${f.unit} | ${f.note ?? ''} |\n`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
