/**
 * npm run bench:report: memory of the web process while it streams a large CSV export
 * (GET /v1/reports/transactions.csv). Seeds BENCH_LINES ledger lines (default 1,000,000: succeeded
 * payments with their credits) for one merchant in a throwaway database, starts the real web
 * process (api/server.ts, one process), streams the whole export once and prints its resident
 * memory before, at its peak (sampled every 20 ms, and the kernel's high-water mark) and the
 * rise, against the 50 MB bound. Then it cuts a second export off halfway and checks that the web
 * still answers (the aborted export gave its connection back).
 *
 * Environment: BENCH_LINES, BENCH_PORT (default: a free port), REDIS_URL, and the database server
 * of TEST_DATABASE_SERVER_URL (a throwaway database cloned from the migrated template).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { freePort } from './lib/ports';
import { startProcess } from './lib/processes';
import { seedMerchant, setUpStack } from './lib/stack';

const LINES = Number(process.env.BENCH_LINES || 1_000_000);
const BOUND_MB = 50;
const SEED_CHUNK = 100_000;

/** Resident set and its high-water mark of a process, in bytes (Linux /proc). */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** GET, reading the body and throwing it away; stops after `abortAfter` bytes when given. */
function download(
  port: number,
  pathAndQuery: string,
  apiKey: string,
  abortAfter?: number,
): Promise<{ status: number; bytes: number; lines: number; aborted: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: pathAndQuery, headers: { Authorization: `Bearer ${apiKey}` } },
      (res) => {
        let bytes = 0;
        let lines = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
          if (abortAfter !== undefined && bytes >= abortAfter) {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, bytes, lines, aborted: true });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, lines, aborted: false }));
        res.on('error', () => undefined);
      },
    );
    req.on('error', (err) => (abortAfter === undefined ? reject(err) : undefined));
  });
}

async function seed(db: ReturnType<typeof createContext>['db'], merchantId: string): Promise<void> {
  // the merchant's and the platform's accounts, as the ledger makes them
  await db.raw(
    `insert into ledger_accounts (owner, environment, currency, kind, allow_negative)
     values (?, 'test', 'USD', 'available', false), ('platform', 'test', 'USD', 'fees', true), ('platform', 'test', 'USD', 'provider_clearing', true)
     on conflict do nothing`,
    [merchantId],
  );
  const account = async (owner: string, kind: string) =>
    (await db('ledger_accounts').where({ owner, environment: 'test', currency: 'USD', kind }).first('id')).id;
  const [available, fees, clearing] = [
    await account(merchantId, 'available'),
    await account('platform', 'fees'),
    await account('platform', 'provider_clearing'),
  ];
  for (let start = 0; start < LINES; start += SEED_CHUNK) {
    const end = Math.min(LINES, start + SEED_CHUNK);
    // one succeeded payment (10,000 charged, fee 260) and its credit per line, half a second apart, ending now
    await db.raw(
      `with s as (
         select i, gen_random_uuid() as pid, gen_random_uuid() as tid, now() - make_interval(secs => (? - i) * 0.5) as at
           from generate_series(?::int, ?::int - 1) as i
       ), p as (
         insert into payments (id, merchant_id, environment, status, method, currency, amount, amount_charged, amount_net, fee, fee_bearer,
                               reference, metadata, operator, phone, provider, version, created, completed, sent_at, window_ends_at, created_at, updated_at)
         select 'pay_' || pid, ?, 'test', 'succeeded', 'mobile_money', 'USD', 10000, 10000, 9740, 260, 'merchant',
                'bench-' || i, '{}', 'vodacom', '243990000001', 'vodacom-sandbox', 3, extract(epoch from at)::bigint, extract(epoch from at)::bigint, at, at, at, at
           from s
       ), t as (
         insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id, created_at)
         select tid, 'payment_credit', 'pay_' || pid, 'test', 'USD', ?, at from s
       )
       insert into ledger_entries (transaction_id, account_id, amount, created_at)
       select tid, a.account, a.amount, at from s
        cross join lateral (values (?::bigint, -10000::bigint), (?::bigint, 9740::bigint), (?::bigint, 260::bigint)) as a(account, amount)`,
      [LINES, start, end, merchantId, merchantId, clearing, available, fees],
    );
    process.stdout.write(`\rseeded ${end.toLocaleString('en')} / ${LINES.toLocaleString('en')} lines`);
  }
  await db.raw(`update ledger_accounts set balance = ?::bigint * 9740 where id = ?`, [LINES, available]);
  await db.raw('analyze ledger_transactions; analyze ledger_entries; analyze payments');
  process.stdout.write('\n');
}

async function main(): Promise<void> {
  const stack = await setUpStack({ logLevel: 'info' });
  const port = Number(process.env.BENCH_PORT || (await freePort()));
  const env: Record<string, string> = {
    ...stack.env,
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    WEB_CONCURRENCY: '1',
  };
  delete env.ADMIN_PORT;
  const ctx = createContext({ role: 'worker', name: 'bench-report', config: loadConfig(env) });
  stack.teardown.add(() => ctx.close());
  try {
    const merchant = await seedMerchant(ctx, { name: 'Bench statements' }, 'read');
    const seedStart = performance.now();
    await seed(ctx.db, merchant.id);
    console.log(`seeding took ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

    const web = startProcess('api/server.ts', env);
    stack.teardown.add(() => web.stop());
    await web.waitForLine((l) => l?.msg === 'web listening', 60_000);
    const pid = web.child.pid!;
    const now = Math.floor(Date.now() / 1000);
    const query = `/v1/reports/transactions.csv?from=${now - 31 * 86_400 + 60}&to=${now + 60}`;

    // warm-up: the route, the statement and the stream once, on a small range
    const warm = await download(port, `/v1/reports/transactions.csv?from=${now - 600}&to=${now + 60}`, merchant.apiKey);
    if (warm.status !== 200) throw new Error(`warm-up answered ${warm.status}`);
    await new Promise((r) => setTimeout(r, 1000));
    const before = memoryOf(pid);

    let peak = before.rss;
    const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rss)), 20);
    const started = performance.now();
    const full = await download(port, query, merchant.apiKey);
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const after = memoryOf(pid);
    peak = Math.max(peak, after.rss);

    const rows = full.lines - 1;
    const rise = Math.max(peak, after.hwm) - before.rss;
    console.log(
      `export: status ${full.status}, ${rows.toLocaleString('en')} rows + header, ${mb(full.bytes)} MB in ${seconds.toFixed(1)} s (${Math.round(rows / seconds).toLocaleString('en')} rows/s)`,
    );
    console.log(
      `web RSS: before ${mb(before.rss)} MB, peak ${mb(peak)} MB (sampled every 20 ms), high-water mark ${mb(after.hwm)} MB (was ${mb(before.hwm)} MB), after ${mb(after.rss)} MB`,
    );
    console.log(
      `peak rise: ${mb(rise)} MB (bound ${BOUND_MB} MB): ${rise <= BOUND_MB * 1024 * 1024 ? 'within' : 'ABOVE'} the bound`,
    );
    if (rows !== LINES) console.log(`WARNING: expected ${LINES} rows`);

    // a client that leaves halfway: the export stops and its connection goes back to the pool
    const cut = await download(port, query, merchant.apiKey, Math.floor(full.bytes / 2));
    const again = await download(
      port,
      `/v1/reports/transactions.csv?from=${now - 600}&to=${now + 60}`,
      merchant.apiKey,
    );
    console.log(
      `an export cut off after ${mb(cut.bytes)} MB: the next export answers ${again.status} with ${again.lines - 1} rows`,
    );
    if (rise > BOUND_MB * 1024 * 1024 || rows !== LINES || again.status !== 200) process.exitCode = 1;
  } finally {
    await stack.tearDown();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
