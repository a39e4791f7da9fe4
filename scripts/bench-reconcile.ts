import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
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
 * Postgres; the loader holds one batch). 1% of the lines carry another amount, 1% are foreign (their
 * payment unlisted), 1% of the payments are not listed: the counts are checked, and the figures are void otherwise.
 */
const TZ = 'Africa/Kinshasa';
const DAY = '2026-11-27';

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
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(randomUUID());
    await db.raw(`insert into merchants (id, name, fees) values ('mer_bench', 'bench', '{}')`);
    let t = Date.now();
    // n succeeded payments through pawaPay, completed across the day
    for (let i = 0; i < n; i += 10_000) {
      const chunk = ids.slice(i, i + 10_000);
      await db.raw(
        `insert into payments (id, merchant_id, environment, status, method, currency, amount, amount_charged, amount_net, fee,
                               fee_bearer, reference, metadata, created, completed, window_ends_at, provider, provider_ref)
         select 'pay_' || u, 'mer_bench', 'live', 'succeeded', 'mobile_money', 'USD', 2500, 2500, 2500, 0, 'merchant',
                'r' || (? + o), '{}', ? + (? + o) % 86000, ? + (? + o) % 86000, now(), 'pawapay', u
           from unnest(?::text[]) with ordinality as x(u, o)`,
        [i, startS, i, startS, i, chunk],
      );
    }
    const fillMs = Date.now() - t;
    const peakAfterFill = peak;
    const heapAfterFill = peakHeap;
    peakHeap = heap();
    const dec = (m: number) => `${Math.floor(m / 100)}.${String(m % 100).padStart(2, '0')}`;
    async function* csv() {
      yield 'Creation Date,MSISDN,Transaction ID,Provider Transaction ID,Amount,Fee,Balance,Currency,Country,MNO,Type,Status\n';
      let batch = '';
      for (let i = 0; i < n; i++) {
        // 1% another amount, 1% foreign, 1% of ours missing (not listed)
        if (i % 100 === 2) continue;
        const id = i % 100 === 1 ? randomUUID() : ids[i];
        const amount = i % 100 === 0 ? 2400 : 2500;
        const when = new Date((startS + (i % 86000)) * 1000).toISOString().replace('T', ' ').slice(0, 19);
        batch += `${when},243811234789,${id},SIM${i},${dec(amount)},${dec(38)},,USD,COD,VODACOM_MPESA_COD,DEPOSIT,COMPLETED\n`;
        if (i % 500 === 499) {
          yield batch;
          batch = '';
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
      `bench:reconcile ${n} lines against ${n} payments: fill ${fillMs} ms (peak RSS ${peakAfterFill} MB, heap ${heapAfterFill} MB); load (stream, parse, insert ${loaded.lines} lines) ${loadMs} ms, peak RSS ${peakAfterLoad} MB, peak heap ${heapDuringLoad} MB; ` +
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
