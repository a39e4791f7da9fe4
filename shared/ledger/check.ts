import type { Executor } from '../db/knex';
import { LedgerAccount } from '../db/models';

/**
 * `npm run ledger:check`: every balance (as the `ledger_balances` view, migration 20261125010700,
 * defines it) against the sum of its account's entries, every transaction sums to zero in one currency and
 * environment and has two entries at least, no guarded account is negative, no debit is left
 * unfolded. Returns the problems found (empty when the ledger is sound).
 *
 * Incremental by default (docs/retention.md#ten-years-of-history): a closed month of entries
 * (ended a day ago: a transaction that began in it has long committed) is checked once, and what
 * it gave is kept (`ledger_check_months`: its verdict; `ledger_check_sums`: each account's sum of
 * its entries that month). A run reads only the entries after the last kept month (the open
 * month, and any closed month not kept yet: all of them at the first run), and compares each
 * balance with the kept sums plus what it read. Entries are partitioned by month on
 * `created_at`, so the months kept are not even opened. A closed month's entries never change
 * (entries are appended; folding a credit flips `unfolded`, which a sum of all entries does not
 * see). `full: true` reads everything, as the check always did, and also says when a kept month no
 * longer matches its entries: what the incremental run cannot see.
 *
 * An entry's month is its transaction's: both are written by one statement, with one `now()`.
 */

export interface CheckOptions {
  /** read every entry (and compare the kept months with them) */
  full?: boolean;
  /** the database's clock by default: `created_at` is Postgres's `now()` */
  now?: Date;
}

export interface CheckReport {
  problems: string[];
  /** the months whose entries this run read (first days, YYYY-MM-DD) */
  monthsRead: string[];
  /** the months this run checked and kept */
  monthsKept: string[];
}

/** A month is closed, and kept, a day after it ends. */
const CLOSED_AFTER_MS = 24 * 3600 * 1000;

const MONTH = `date_trunc('month', e.created_at at time zone 'UTC')::date`;
const isoDay = (d: Date | string) => (typeof d === 'string' ? d.slice(0, 10) : d.toISOString().slice(0, 10));
const nextMonth = (day: string) => {
  const [y, m] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m, 1));
};

export async function checkLedger(db: Executor, opts: CheckOptions = {}): Promise<string[]> {
  return (await runLedgerCheck(db, opts)).problems;
}

export async function runLedgerCheck(db: Executor, opts: CheckOptions = {}): Promise<CheckReport> {
  return opts.full ? fullCheck(db) : incrementalCheck(db, opts);
}

type Account = { id: number; owner: string; kind: string; currency: string; environment: string };
const accountText = (r: Account) => `account ${r.id} (${r.owner} ${r.environment} ${r.currency} ${r.kind})`;

/** The checks that read the accounts table and the unfolded entries only (a partial index): always whole. */
async function accountChecks(db: Executor): Promise<string[]> {
  const problems: string[] = [];
  const negative = await LedgerAccount.query(db)
    .where('allow_negative', false)
    .where('balance', '<', 0)
    .select('id', 'owner', 'balance');
  for (const r of negative) problems.push(`account ${r.id} (${r.owner}) is negative: ${r.balance}`);
  const unfoldedDebits = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .where('e.unfolded', true)
    .andWhere((q) => q.where('e.amount', '<=', 0).orWhere('a.allow_negative', true))
    .select('e.id');
  for (const r of unfoldedDebits) problems.push(`entry ${r.id} is unfolded but not a credit to a guarded account`);
  return problems;
}

/** The per-transaction checks on the entries from `since` on, by month. */
async function transactionChecks(db: Executor, since: Date | null) {
  const from = since ?? '-infinity';
  const byMonth = new Map<string, string[]>();
  const add = (month: string, p: string) => byMonth.set(month, [...(byMonth.get(month) ?? []), p]);
  const { rows: unbalanced } = await db.raw(
    `select (${MONTH})::text as month, t.id, t.kind, t.reference_id, a.currency, sum(e.amount)::bigint as total
       from ledger_entries e join ledger_accounts a on a.id = e.account_id join ledger_transactions t on t.id = e.transaction_id
      where e.created_at >= ? group by 1, t.id, a.currency having sum(e.amount) <> 0`,
    [from],
  );
  for (const r of unbalanced)
    add(isoDay(r.month), `transaction ${r.id} (${r.kind} ${r.reference_id}) sums to ${r.total} ${r.currency}`);
  const { rows: mixed } = await db.raw(
    `select distinct (${MONTH})::text as month, t.id
       from ledger_entries e join ledger_accounts a on a.id = e.account_id join ledger_transactions t on t.id = e.transaction_id
      where e.created_at >= ? and (a.currency <> t.currency or a.environment <> t.environment)`,
    [from],
  );
  for (const r of mixed) add(isoDay(r.month), `transaction ${r.id} mixes currencies or environments`);
  const { rows: transactions } = await db.raw(
    `select month::text as month, count(*)::int as n, coalesce(jsonb_agg(id) filter (where entries < 2), '[]') as lonely
       from (select date_trunc('month', t.created_at at time zone 'UTC')::date as month, t.id, count(e.id) as entries
               from ledger_transactions t left join ledger_entries e on e.transaction_id = t.id and e.created_at >= ?
              where t.created_at >= ? group by 1, t.id) x
      group by month`,
    [from, from],
  );
  const counts = new Map<string, number>();
  for (const r of transactions) {
    counts.set(isoDay(r.month), r.n);
    for (const id of r.lonely as string[]) add(isoDay(r.month), `transaction ${id} has fewer than two entries`);
  }
  return { byMonth, counts };
}

/** Each account's sum of its entries from `since` on, by month. */
async function sumsByMonth(db: Executor, since: Date | null) {
  const { rows } = await db.raw(
    `select (${MONTH})::text as month, e.account_id, sum(e.amount)::text as total, count(*)::int as n
       from ledger_entries e where e.created_at >= ? group by 1, 2`,
    [since ?? '-infinity'],
  );
  return (rows as { month: Date | string; account_id: number; total: string; n: number }[]).map((r) => ({
    ...r,
    month: isoDay(r.month),
  }));
}

/**
 * Guarded balances against their accounts' sums of entries. The balance is `ledger_balances`'s
 * (the cached balance plus the unfolded credits), computed for every account at once: the view
 * sums each account's unfolded entries apart, one probe of every monthly partition per account.
 */
async function balanceProblems(db: Executor, totals: Map<number, bigint>): Promise<string[]> {
  const { rows } = await db.raw(
    `select a.id, a.owner, a.kind, a.currency, a.environment, a.balance::text as cached,
            (a.balance::numeric + coalesce(u.total, 0))::text as balance
       from ledger_accounts a
       left join (select account_id, sum(amount) as total from ledger_entries where unfolded group by account_id) u
         on u.account_id = a.id
      where not a.allow_negative order by a.id`,
  );
  const problems: string[] = [];
  for (const r of rows as (Account & { balance: string; cached: string })[]) {
    const total = totals.get(Number(r.id)) ?? 0n;
    if (BigInt(r.balance) === total) continue;
    // reported as the cached balance against its folded entries (the unfolded credits are in neither)
    const folded = total - (BigInt(r.balance) - BigInt(r.cached));
    problems.push(`${accountText(r)}: cached ${r.cached}, entries ${folded}`);
  }
  return problems;
}

/**
 * The check's reads in one snapshot (REPEATABLE READ, read only): they are several statements, and
 * a posting committed between two of them would show a balance against sums that missed it (a
 * payout delivered while the check ran was reported as a wrong balance). Inside a caller's
 * transaction, the caller's snapshot rules.
 */
async function inOneSnapshot<T>(db: Executor, read: (snapshot: Executor) => Promise<T>): Promise<T> {
  if (db.isTransaction) return read(db);
  return db.transaction((trx) => read(trx), { isolationLevel: 'repeatable read', readOnly: true });
}

async function incrementalCheck(db: Executor, opts: CheckOptions): Promise<CheckReport> {
  const seen = await inOneSnapshot(db, async (snapshot) => {
    const now: Date = opts.now ?? (await snapshot.raw(`select now() as now`)).rows[0].now;
    const kept: { month: Date | string; problems: string[] }[] = (
      await snapshot.raw(`select month::text as month, problems from ledger_check_months order by month`)
    ).rows;
    const since = kept.length ? nextMonth(isoDay(kept[kept.length - 1].month)) : null;
    const sums = await sumsByMonth(snapshot, since);
    const { byMonth, counts } = await transactionChecks(snapshot, since);

    const totals = new Map<number, bigint>();
    const keptSums: { account_id: number; total: string }[] = (
      await snapshot.raw(`select account_id, sum(total)::text as total from ledger_check_sums group by account_id`)
    ).rows;
    for (const r of keptSums) totals.set(Number(r.account_id), BigInt(r.total));
    for (const r of sums) totals.set(Number(r.account_id), (totals.get(Number(r.account_id)) ?? 0n) + BigInt(r.total));

    const read = [...new Set([...sums.map((s) => s.month), ...counts.keys()])].sort();
    const problems = [
      ...(await balanceProblems(snapshot, totals)),
      ...kept.flatMap((k) => k.problems),
      ...read.flatMap((m) => byMonth.get(m) ?? []),
      ...(await accountChecks(snapshot)),
    ];
    return { now, sums, byMonth, counts, read, problems };
  });

  // the closed months read are kept, after the snapshot (their figures are the snapshot's)
  const { now, sums, byMonth, counts, read } = seen;
  const closed = read.filter((m) => nextMonth(m).getTime() + CLOSED_AFTER_MS <= now.getTime());
  const monthsKept: string[] = [];
  for (const month of closed) {
    const rows = sums.filter((s) => s.month === month);
    const stored = await db.transaction(async (trx) => {
      const { rows: made } = await trx.raw(
        `insert into ledger_check_months (month, entries, transactions, problems) values (?, ?, ?, ?::jsonb)
         on conflict (month) do nothing returning month`,
        [month, rows.reduce((n, r) => n + r.n, 0), counts.get(month) ?? 0, JSON.stringify(byMonth.get(month) ?? [])],
      );
      if (made.length === 0) return false; // another run kept it first
      if (rows.length)
        await trx('ledger_check_sums').insert(rows.map((r) => ({ month, account_id: r.account_id, total: r.total })));
      return true;
    });
    if (stored) monthsKept.push(month);
  }
  return { problems: seen.problems, monthsRead: read, monthsKept };
}

async function fullCheck(pool: Executor): Promise<CheckReport> {
  return inOneSnapshot(pool, (db) => fullCheckIn(db));
}

async function fullCheckIn(db: Executor): Promise<CheckReport> {
  const sums = await sumsByMonth(db, null);
  const { byMonth, counts } = await transactionChecks(db, null);
  const totals = new Map<number, bigint>();
  for (const r of sums) totals.set(Number(r.account_id), (totals.get(Number(r.account_id)) ?? 0n) + BigInt(r.total));
  // a kept month whose entries changed since it was checked (the incremental check reads it no more);
  // a schema before migration 20261201000400 keeps none
  const { rows: has } = await db.raw(`select to_regclass('ledger_check_months') is not null as has`);
  const keptMonths = new Set(
    has[0].has
      ? ((await db.raw(`select month::text as month from ledger_check_months`)).rows as { month: Date | string }[]).map(
          (r) => isoDay(r.month),
        )
      : [],
  );
  const keptSums: { month: Date | string; account_id: number; total: string }[] = has[0].has
    ? (await db.raw(`select month::text as month, account_id, total::text as total from ledger_check_sums`)).rows
    : [];
  const found = new Map(
    sums.filter((s) => keptMonths.has(s.month)).map((s) => [`${s.month} ${s.account_id}`, s.total]),
  );
  const changed: string[] = [];
  for (const k of keptSums) {
    const key = `${isoDay(k.month)} ${k.account_id}`;
    const now = found.get(key) ?? '0';
    found.delete(key);
    if (BigInt(now) !== BigInt(k.total))
      changed.push(`month ${isoDay(k.month)} account ${k.account_id}: kept ${k.total}, entries now ${now}`);
  }
  for (const [key, now] of found) {
    const [month, account] = key.split(' ');
    changed.push(`month ${month} account ${account}: kept 0, entries now ${now}`);
  }
  const read = [...new Set([...sums.map((s) => s.month), ...counts.keys()])].sort();
  const problems = [
    ...(await balanceProblems(db, totals)),
    ...read.flatMap((m) => byMonth.get(m) ?? []),
    ...(await accountChecks(db)),
    ...changed,
  ];
  return { problems, monthsRead: read, monthsKept: [] };
}
