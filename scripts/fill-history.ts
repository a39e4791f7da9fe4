import pg from 'pg';
import { createDb } from '../shared/db/knex';
import { boundsOfName, ensurePartitions, PARTITIONED, partitionsOf } from '../shared/db/partitions';

/**
 * `npm run db:fill-history -- --rows 100000000`: fills the history tables of `DATABASE_URL` (a
 * scratch database, migrated) with ten years of realistic rows, for the scale measurement of
 * docs/retention.md#ten-years-of-history (`npm run db:measure-history`).
 *
 * `--rows` is the total across the four history tables: payment status changes, ledger entries,
 * events and webhook deliveries. Each payment brings 2 status changes (created, then succeeded or
 * failed), 1 event and 1 delivery; 90 % succeed and bring a ledger transaction of 3 entries
 * (provider clearing, merchant available, platform fees). 6.7 rows a payment on average: ledger
 * entries 40 %, status changes 30 %, events 15 %, deliveries 15 %. Their parents come on top:
 * payments (rows / 6.7), ledger transactions (entries / 3) and daily settlements.
 *
 * Payments are spread evenly over `--years` (10) ending now, day by day, oldest first, as
 * production appends them; `--merchants` (2,000) share them, three heavy ones taking 15 %, 10 %
 * and 5 %, 70 % in USD and 30 % in CDF. Every ledger transaction is settled by its merchant's
 * daily settlement of its currency (ids derived from merchant, currency and day). Entries are
 * written folded and each merchant account's cached balance is raised by its entries in the same
 * transaction, so `npm run ledger:check` holds at any point.
 *
 * Set-based (`insert … select … from generate_series`), one transaction per chunk of whole days
 * (`--chunk` payments, 100,000), into the production tables with all their indexes, keys and
 * check constraints (the foreign keys' triggers are off during the fill: see main). Run again
 * with a larger `--rows`, it appends the days after those already filled, denser (the target is
 * the same ten years: stopping early leaves the oldest years filled). Meant for a
 * private instance: run it under `nice`.
 *
 * `--past-partitions`: on a database migrated fresh (its partitioned history tables empty), the
 * partition of the rows before the migration (`<table>_before_<yyyymm>`, empty) is dropped and
 * one partition a month (a year for events) is created over the ten years, so that the fill
 * spreads them as ten years of production on the partitioned schema would (the online migration
 * of an existing database leaves its old rows in one partition instead).
 */

const ROWS_PER_PAYMENT = 6.7;
const HEAVY = [0.15, 0.1, 0.05];
const DAY = 86_400;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]?.replace(/_/g, ''));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
}

const PREFIX = 'fill-history merchant';

/** The merchants, their webhook endpoints and ledger accounts (once), and the fill's own bookkeeping table. */
async function setUp(db: pg.Client, merchants: number): Promise<void> {
  await db.query(`create table if not exists fill_history_state (
      id int primary key, start_day bigint not null, days int not null, per_day int not null, next_day int not null)`);
  const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from merchants where name like $1`, [
    `${PREFIX} %`,
  ]);
  if (rows[0].n >= merchants) return;
  await db.query('begin');
  await db.query(
    `insert into merchants (id, name, fees)
     select 'mer_' || gen_random_uuid(), $1 || ' ' || lpad(g::text, 5, '0'), '{"mobile_money":{"percent":2}}'::jsonb
       from generate_series($2::int, $3::int - 1) g`,
    [PREFIX, rows[0].n, merchants],
  );
  await db.query(
    `insert into webhooks (id, merchant_id, environment, url, events)
     select 'wh_' || gen_random_uuid(), m.id, 'live', 'https://hooks.example.com/' || m.id, '{*}'
       from merchants m where m.name like $1 and not exists (select 1 from webhooks w where w.merchant_id = m.id)`,
    [`${PREFIX} %`],
  );
  await db.query(
    `insert into ledger_accounts (owner, environment, currency, kind, allow_negative)
     select m.id, 'live', c, 'available', false from merchants m cross join unnest('{USD,CDF}'::text[]) c where m.name like $1
     union all
     select 'platform', 'live', c, k, true from unnest('{USD,CDF}'::text[]) c cross join unnest('{provider_clearing,fees}'::text[]) k
     on conflict do nothing`,
    [`${PREFIX} %`],
  );
  await db.query('commit');
}

/** The merchants in slots (0, 1, 2 the heavy ones), with their endpoint and accounts: a temporary table of this session. */
async function slots(db: pg.Client): Promise<number> {
  await db.query(`create temporary table fill_slots as
    select (row_number() over (order by m.name) - 1)::int as slot, m.id, w.id as webhook_id,
           (select a.id from ledger_accounts a where a.owner = m.id and a.environment = 'live' and a.currency = 'USD' and a.kind = 'available') as usd,
           (select a.id from ledger_accounts a where a.owner = m.id and a.environment = 'live' and a.currency = 'CDF' and a.kind = 'available') as cdf
      from merchants m join webhooks w on w.merchant_id = m.id and w.environment = 'live'
     where m.name like '${PREFIX} %'`);
  await db.query('create unique index on fill_slots (slot)');
  await db.query('analyze fill_slots');
  await db.query(`create temporary table fill_platform as
    select currency, max(id) filter (where kind = 'provider_clearing') as clearing, max(id) filter (where kind = 'fees') as fees
      from ledger_accounts where owner = 'platform' and environment = 'live' group by currency`);
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from fill_slots');
  return rows[0].n;
}

/** One chunk: the payments of days [from, to) (day numbers since the start), with everything they bring, in one transaction. */
async function fillDays(
  db: pg.Client,
  startDay: number,
  from: number,
  to: number,
  perDay: number,
  merchants: number,
  eventCreated: boolean,
) {
  const heavy = HEAVY.reduce<number[]>((acc, share) => [...acc, (acc.at(-1) ?? 0) + share], []);
  await db.query('begin');
  await db.query(
    `create temporary table fill_p on commit drop as
     select 'pay_' || u as id, u, gen_random_uuid() as tx, s.id as merchant_id, s.webhook_id, cur.currency,
            case cur.currency when 'USD' then s.usd else s.cdf end as account,
            amt.amount, greatest(1, amt.amount / 50) as fee, t.created, ok.succeeded
       from (select d, gen_random_uuid()::text as u, random() as r, random() as r2, random() as r3, random() as r4,
                    random() as r5, random() as r6
               from generate_series($2::int, $3::int - 1) d cross join generate_series(1, $4::int) g) x
       cross join lateral (select case when x.r < $5 then 0 when x.r < $6 then 1 when x.r < $7 then 2
                                       else 3 + floor(x.r2 * ($8 - 3))::int end as slot) pick
       join fill_slots s on s.slot = pick.slot
       cross join lateral (select case when x.r3 < 0.7 then 'USD' else 'CDF' end as currency) cur
       cross join lateral (select case cur.currency when 'USD' then 100 + floor(x.r4 * 49900)::bigint
                                                    else 1000 + floor(x.r4 * 4999000)::bigint end as amount) amt
       cross join lateral (select ($1::bigint + x.d) * ${DAY} + floor(x.r5 * ${DAY})::bigint as created) t
       cross join lateral (select x.r6 < 0.9 as succeeded) ok`,
    [startDay, from, to, perDay, heavy[0], heavy[1], heavy[2], merchants],
  );
  await db.query(
    `insert into payments (id, merchant_id, environment, status, method, currency, amount, amount_charged, amount_net, fee,
                           fee_bearer, reference, description, metadata, operator, phone, provider, provider_ref, failure_code,
                           version, created, completed, sent_at, window_ends_at, created_at, updated_at)
     select id, merchant_id, 'live', case when succeeded then 'succeeded' else 'failed' end, 'mobile_money', currency, amount,
            amount, amount - fee, fee, 'merchant', 'order-' || u, 'Order ' || substr(u, 1, 8), '{"channel":"app"}',
            'vodacom', '+24381' || lpad((created % 10000000)::text, 7, '0'), 'pawapay', 'pp-' || substr(u, 10, 27),
            case when succeeded then null else 'insufficient_funds' end,
            3, created, created + 40, to_timestamp(created + 1), to_timestamp(created + 900), to_timestamp(created),
            to_timestamp(created + 40)
       from fill_p`,
  );
  await db.query(
    `insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
     select id, null, 'pending', 'created', to_timestamp(created) from fill_p
     union all
     select id, 'pending', case when succeeded then 'succeeded' else 'failed' end, 'provider-callback', to_timestamp(created + 40)
       from fill_p`,
  );
  await db.query(
    `insert into settlements (id, merchant_id, environment, currency, period_start, period_end, gross, fees, refunds, payouts,
                              net, count, created)
     select 'stl_' || md5(merchant_id || currency || day)::uuid, merchant_id, 'live', currency, day * ${DAY}, (day + 1) * ${DAY},
            sum(amount), sum(fee), 0, 0, sum(amount - fee), count(*), (day + 1) * ${DAY} + 3600
       from (select *, created / ${DAY} as day from fill_p where succeeded) p
      group by merchant_id, currency, day
     on conflict do nothing`,
  );
  await db.query(
    `insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id, created_at, settlement_id)
     select tx, 'payment_credit', id, 'live', currency, merchant_id, to_timestamp(created + 40),
            'stl_' || md5(merchant_id || currency || (created / ${DAY}))::uuid
       from fill_p where succeeded`,
  );
  await db.query(
    `insert into ledger_entries (transaction_id, account_id, amount, created_at, unfolded)
     select p.tx, e.account_id, e.amount, to_timestamp(p.created + 40), false
       from fill_p p
       join fill_platform pl on pl.currency = p.currency
       cross join lateral (values (pl.clearing, -p.amount), (p.account, p.amount - p.fee), (pl.fees, p.fee)) e(account_id, amount)
      where p.succeeded`,
  );
  await db.query(
    `update ledger_accounts a set balance = a.balance + s.total
       from (select account, sum(amount - fee) as total from fill_p where succeeded group by account) s
      where a.id = s.account`,
  );
  await db.query(
    `create temporary table fill_e on commit drop as
     select 'evt_' || u || '_' || (created + 40) || '_' || substr(md5(u), 1, 8) as event_id, p.*,
            case when succeeded then 'payment.succeeded' else 'payment.failed' end as type
       from fill_p p`,
  );
  await db.query(
    `insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
     select e.event_id, merchant_id, 'live', type, e.id, 3, created + 40,
            jsonb_build_object('id', e.event_id, 'type', type, 'created', created + 40, 'data', jsonb_build_object('object_version', 3,
              'object', jsonb_build_object('id', e.id, 'object', 'payment', 'status', case when succeeded then 'succeeded' else 'failed' end,
                'amount', amount, 'currency', currency, 'fee', fee, 'amount_net', amount - fee, 'method', 'mobile_money',
                'reference', 'order-' || e.u, 'description', 'Order ' || substr(e.u, 1, 8), 'metadata', '{"channel":"app"}'::jsonb,
                'created', created, 'completed', created + 40)))
       from fill_e e`,
  );
  await db.query(
    // event_created (the partitioned events' key) is set by a trigger, off during the fill: written here, where the column is
    `insert into webhook_deliveries (id, event_id, ${eventCreated ? 'event_created, ' : ''}webhook_id, status, round, attempts, next_attempt_at,
                                     last_status_code, created, created_at, updated_at, completed_at)
     select 'whd_' || gen_random_uuid(), event_id, ${eventCreated ? 'created, ' : ''}webhook_id, 'succeeded', 1, 1, to_timestamp(created + 40), 200, created + 40,
            to_timestamp(created + 40), to_timestamp(created + 41), to_timestamp(created + 41)
       from fill_e`,
  );
  await db.query('update fill_history_state set next_day = $1 where id = 1', [to]);
  await db.query('commit');
}

/** Ten years of monthly (yearly) partitions in place of the empty partition of the rows before the migration. */
async function pastPartitions(url: string, years: number): Promise<void> {
  const knex = createDb(url, 1);
  try {
    for (const t of PARTITIONED) {
      const before = (await partitionsOf(knex, t.table)).find((n) => boundsOfName(t, n)?.from === null);
      if (!before) continue;
      const { rows } = await knex.raw(`select exists (select 1 from ??) as used`, [before]);
      if (rows[0].used) throw new Error(`${before} holds rows: --past-partitions is for a database migrated fresh`);
      await knex.raw(`alter table ?? detach partition ??`, [t.table, before]);
      await knex.raw(`drop table ??`, [before]);
    }
    const from = Date.now() - (years * 365.25 + 31) * DAY * 1000;
    const made = await ensurePartitions(knex, Date.now(), 12, from);
    process.stdout.write(`created ${made.length} partitions from ${new Date(from).toISOString().slice(0, 7)}\n`);
  } finally {
    await knex.destroy();
  }
}

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL names the scratch database to fill');
  const rows = arg('rows', 1_000_000);
  const years = arg('years', 10);
  const chunk = arg('chunk', 100_000);
  const merchants = Math.max(10, Math.floor(arg('merchants', 2000)));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    // a chunk is one transaction of this session: a crash loses that chunk, nothing else
    await db.query('set synchronous_commit = off');
    if (process.argv.includes('--past-partitions')) await pastPartitions(url, arg('years', 10));
    // the foreign keys hold by construction: their per-row triggers off (a superuser's setting) about doubles the rate;
    // every index and check constraint stays. The measurement's inserts run with them, as in production
    await db.query('set session_replication_role = replica');
    await setUp(db, merchants);
    const slotCount = await slots(db);
    const eventCreated =
      (
        await db.query(
          `select 1 from information_schema.columns where table_name = 'webhook_deliveries' and column_name = 'event_created'`,
        )
      ).rowCount === 1;
    const days = Math.round(years * 365.25);
    const { rows: state } = await db.query<{ start_day: string; days: number; per_day: number; next_day: number }>(
      'select * from fill_history_state where id = 1',
    );
    // the first run fixes the ten years and the payments a day; a later one with more rows raises
    // the payments a day of the days still to fill
    const perDay = Math.max(1, Math.round(rows / ROWS_PER_PAYMENT / days));
    let startDay: number;
    let next: number;
    if (state.length === 0) {
      startDay = Math.floor(Date.now() / 1000 / DAY) - days;
      next = 0;
      await db.query('insert into fill_history_state values (1, $1, $2, $3, 0)', [startDay, days, perDay]);
    } else {
      startDay = Number(state[0].start_day);
      next = state[0].next_day;
      await db.query('update fill_history_state set per_day = $1 where id = 1', [perDay]);
    }
    const step = Math.max(1, Math.floor(chunk / perDay));
    process.stdout.write(
      `filling ${days - next} of ${days} days, ${perDay} payments a day (~${Math.round(perDay * ROWS_PER_PAYMENT)} history rows), ` +
        `${slotCount} merchants, ${step} days a chunk\n`,
    );
    const started = Date.now();
    for (let from = next; from < days; from += step) {
      const to = Math.min(days, from + step);
      const t0 = Date.now();
      await fillDays(db, startDay, from, to, perDay, slotCount, eventCreated);
      const done = (to - next) * perDay * ROWS_PER_PAYMENT;
      const elapsed = (Date.now() - started) / 1000;
      process.stdout.write(
        `days ${to}/${days}: chunk ${((Date.now() - t0) / 1000).toFixed(1)} s, ~${(done / 1e6).toFixed(1)} M history rows this run ` +
          `(${Math.round(done / elapsed)} rows/s)\n`,
      );
    }
  } finally {
    await db.end();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
