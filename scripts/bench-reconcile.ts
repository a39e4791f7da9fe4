import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createDatabase } from './lib/databases';
import { createDb } from '../shared/db/knex';
import { runSql } from '../shared/db/sql/run';
import { CLASSIFY_LINES, CLASSIFY_MISSING_THERE, COUNT_ITEMS } from '../shared/db/sql/reconciliation';
import { loadStatement } from '../shared/reconciliation/load';
import { pawapayCsvParser } from '../shared/providers/pawapay/statements';
import { dayBounds } from '../shared/reconciliation/days';

/**
 * `npm run bench:reconcile [-- --lines 100000]`: a day of N pawaPay statement lines against N
 * operations (docs/reconciliation.md). Fills N succeeded payments, streams an N-line statement
 * CSV (generated as it is read, never whole) through the parser and the loader, then runs the
 * matching. Prints each step's time and the process's peak memory (the matching runs in
 * Postgres; the loader holds at most two batches). 1% of the lines carry another amount, 1% are foreign (their
 * payment unlisted), 1% of the payments are not listed: the counts are checked, and the figures are void otherwise.
 * The bench holds nothing per line itself (payment i's id is made from i, here and in the SQL
 * fill), so that what grows is the loader's: the live heap after a full GC is sampled every
 * 10% of the lines.
 */
const TZ = 'Africa/Kinshasa';
const DAY = '2026-11-27';
/** Payment i's uuid, in JS and in SQL (`g` the index): no array of a million ids. */
const idOf = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const ID_SQL = (g: string) => `'00000000-0000-4000-8000-' || lpad(to_hex(${g}), 12, '0')`;
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function main() {
  const { values } = parseArgs({ options: { lines: { type: 'string', default: '100000' } } });
  const n = Number(values.lines);
  const database = await createDatabase(`svc_bench_reconcile_${process.pid}`, { replace: true });
  const db = createDb(database.url, 4);
  const rss = () => Math.round(process.memoryUsage().rss / 1024 / 1024);
  const heap = () => Math.round(process.memoryUsage().heapUsed / 1024 / 1024);
  let peak = rss();
  let peakHeap = heap();
  const sampler = setInterval(() => {
    peak = Math.max(peak, rss());
    peakHeap = Math.max(peakHeap, heap());
  }, 50);
  try {
    const { start } = dayBounds(DAY, TZ);
    const startS = Math.floor(start / 1000);
    await db.raw(`insert into merchants (id, name, fees) values ('mer_bench', 'bench', '{}')`);
    let t = Date.now();
    // n succeeded payments through pawaPay, completed across the day
    for (let i = 0; i < n; i += 10_000) {
      await db.raw(
        `insert into payments (id, merchant_id, environment, status, method, currency, amount, amount_charged, amount_net, fee,
                               fee_bearer, reference, metadata, created, completed, window_ends_at, provider, provider_ref)
         select 'pay_' || ${ID_SQL('g')}, 'mer_bench', 'live', 'succeeded', 'mobile_money', 'USD', 2500, 2500, 2500, 0,
                'merchant', 'r' || g, '{}', ? + g % 86000, ? + g % 86000, now(), 'pawapay', ${ID_SQL('g')}
           from generate_series(?::int, ?::int) as g`,
        [startS, startS, i, Math.min(n, i + 10_000) - 1],
      );
    }
    const fillMs = Date.now() - t;
    // autovacuum may be off: the matching is planned on what ANALYZE saw (not timed)
    await db.raw('vacuum analyze payments');
    const peakAfterFill = peak;
    const heapAfterFill = peakHeap;
    gc();
    peak = rss();
    peakHeap = heap();
    const live: number[] = [];
    const dec = (m: number) => `${Math.floor(m / 100)}.${String(m % 100).padStart(2, '0')}`;
    async function* csv() {
      yield 'Creation Date,MSISDN,Transaction ID,Provider Transaction ID,Amount,Fee,Balance,Currency,Country,MNO,Type,Status\n';
      let batch = '';
      for (let i = 0; i < n; i++) {
        // 1% another amount, 1% foreign, 1% of ours missing (not listed)
        if (i % 100 === 2) continue;
        const id = i % 100 === 1 ? randomUUID() : idOf(i);
        const amount = i % 100 === 0 ? 2400 : 2500;
        const when = new Date((startS + (i % 86000)) * 1000).toISOString().replace('T', ' ').slice(0, 19);
        batch += `${when},243811234789,${id},SIM${i},${dec(amount)},${dec(38)},,USD,COD,VODACOM_MPESA_COD,DEPOSIT,COMPLETED\n`;
        if (i % 500 === 499) {
          yield batch;
          batch = '';
        }
        if (i % Math.max(1, Math.floor(n / 10)) === 0) {
          gc();
          live.push(heap());
        }
      }
      if (batch) yield batch;
    }
    t = Date.now();
    const loaded = await loadStatement(
      db,
      {
        connector: 'pawapay',
        source: 'api',
        format: 'pawapay-csv',
        providerStatementId: randomUUID(),
        timeZone: TZ,
        maxBytes: 2 ** 40,
      },
      Readable.from(csv()),
      pawapayCsvParser,
    );
    const loadMs = Date.now() - t;
    await db.raw('vacuum analyze statement_lines');
    const peakAfterLoad = peak;
    const heapDuringLoad = peakHeap;
    await db.raw(
      `insert into reconciliation_runs (id, connector, business_day, status) values ('rec_bench', 'pawapay', ?, 'running')`,
      [DAY],
    );
    t = Date.now();
    await runSql(db, CLASSIFY_LINES, ['pawapay', DAY, 'rec_bench', 150]);
    await runSql(db, CLASSIFY_MISSING_THERE, ['pawapay', DAY, 'rec_bench', startS, startS + 86400]);
    const matchMs = Date.now() - t;
    const counts = Object.fromEntries(
      (await runSql<{ category: string; n: number }>(db, COUNT_ITEMS, ['rec_bench'])).map((r) => [r.category, r.n]),
    );
    // line i: i % 100 = 0 another amount, 1 foreign (and payment i not listed), 2 not listed
    const expected = { 'amount-mismatch': 0, 'missing-here': 0, 'missing-there': 0 };
    for (let i = 0; i < n; i++) {
      if (i % 100 === 0) expected['amount-mismatch']++;
      if (i % 100 === 1) expected['missing-here']++;
      if (i % 100 === 1 || i % 100 === 2) expected['missing-there']++;
    }
    const ok = Object.entries(expected).every(([k, v]) => counts[k] === v);
    const note = ok ? '' : ` VOID: counts ${JSON.stringify(counts)} are not ${JSON.stringify(expected)}`;
    process.stdout.write(
      `bench:reconcile ${n} lines against ${n} payments: fill ${fillMs} ms (peak RSS ${peakAfterFill} MB, heap ${heapAfterFill} MB); load (stream, parse, insert ${loaded.lines} lines) ${loadMs} ms, peak RSS ${peakAfterLoad} MB, peak heap ${heapDuringLoad} MB, live heap after GC every 10% of the lines ${live.join(' ')} MB; ` +
        `match ${matchMs} ms; peak RSS ${peak} MB; counts ${JSON.stringify(counts)}${note}\n`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    clearInterval(sampler);
    await db.destroy();
    await database.drop();
  }
}

void main();
