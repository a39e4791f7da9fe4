import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { openSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import knex, { type Knex } from 'knex';
import { ServiceClient } from '../shared/client/signing';
import { PROJECT_ROOT, portOpen } from './local-services';
import { drillMerchant } from './chaos-merchant';
import { operatorApi } from './lib/demo';
import { answers200, pidAlive, sleep, waitFor as waitForEvery } from './lib/processes';
import { ARCHIVE_TIMEOUT_S, haDown, haTopologyAt, haUp, pgbackrest } from './ha';
import { backup, dropRestored, restore } from './backup';

/**
 * `npm run drill:restore`: point-in-time recovery, proved (docs/durability.md#drills). On the HA Postgres of
 * scripts/ha.ts (started if it is not up, on --pg-base 5433), the whole service (`npm start`,
 * compiled, on --base-port 5330…5334, the machine's Redis under a queue prefix of its own) takes a
 * load of payments that the sandbox provider confirms (ledger lines and all); then:
 *   1. a full backup (db:backup);
 *   2. more load; the service is stopped, and a time T noted (Postgres's clock);
 *   3. an operator's mistake: 1,000 payments and their ledger lines deleted by hand;
 *   4. a restore to T into a fresh data directory (db:restore), started on --restore-port 5438.
 * It asserts that every payment that existed at T is back exactly as it was (every column, its
 * status history and ledger lines), and that `npm run ledger:check` passes on the restored
 * database. It prints the times of the backup and the restore, and the RPO for a total loss of
 * both nodes: WAL is archived at least every archive_timeout (60 s), so at most that much of the
 * last writes is lost with both disks. Exit 0 when it all holds, 1 otherwise.
 */

const { values: opts } = parseArgs({
  options: {
    'pg-base': { type: 'string', default: process.env.HA_PG_BASE || '5433' },
    'etcd-base': { type: 'string', default: process.env.HA_ETCD_BASE || '5441' },
    'base-port': { type: 'string', default: '5330' },
    'restore-port': { type: 'string', default: '5438' },
    before: { type: 'string', default: '600' },
    after: { type: 'string', default: '1400' },
    deleted: { type: 'string', default: '1000' },
  },
});
const say = (line: string) => process.stdout.write(`drill:restore | ${line}\n`);
/** lib/processes waitFor, polling every 250 ms */
const waitFor = (what: string, check: () => Promise<boolean> | boolean, timeoutMs: number) =>
  waitForEvery(what, check, timeoutMs, 250);
const ADMIN_TOKEN = 'drill-restore-admin-token-0123456789';
const DATABASE = 'svc_restore_drill';

async function main(): Promise<number> {
  const h = haTopologyAt(Number(opts['pg-base']), Number(opts['etcd-base']));
  const base = Number(opts['base-port']);
  const [nBefore, nAfter, nDeleted] = [Number(opts.before), Number(opts.after), Number(opts.deleted)];
  if (nBefore + nAfter < nDeleted) throw new Error('--before + --after must be at least --deleted');
  for (const p of [base, base + 1, base + 2, base + 3, base + 4, Number(opts['restore-port'])])
    if (await portOpen(p)) throw new Error(`port ${p} is taken: choose another --base-port or --restore-port`);
  const ours = !(await portOpen(h.leaderPort));
  const { leader } = await haUp(h);
  say(
    `HA Postgres up (leader ${leader.name}, leader's HAProxy on ${h.leaderPort}; WAL archived by pgBackRest at least every ${ARCHIVE_TIMEOUT_S} s)`,
  );
  const liveUrl = `postgres://postgres@127.0.0.1:${h.leaderPort}/${DATABASE}`;
  const admin = knex({
    client: 'pg',
    connection: liveUrl.replace(`/${DATABASE}`, '/postgres'),
    pool: { min: 0, max: 1 },
  });
  await admin.raw(`drop database if exists ${DATABASE} with (force)`);
  await admin.destroy();

  execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts/build.js'), '--if-stale'], {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
  });
  const service = startService(base, liveUrl);
  let db: Knex | undefined;
  let restored: Knex | undefined;
  try {
    await waitFor('the service', () => answers200(`http://127.0.0.1:${base}/health/ready`), 180_000);
    const client = await merchant(base);
    db = knex({ client: 'pg', connection: liveUrl, pool: { min: 0, max: 4 } });

    await load(client, db, nBefore);
    const b = backup(h, 'full');
    say(`backup ${b.label} (full) in ${b.seconds.toFixed(1)} s`);
    await load(client, db, nAfter);

    // T, once the service has stopped writing: what existed then must come back exactly
    await stopService(service);
    const T: string = (
      await db.raw(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as t`)
    ).rows[0].t;
    const atT = await snapshot(db);
    await sleep(1500);
    say(
      `T = ${T}: ${atT.payments.length} payments, ${atT.history.length} status changes, ${atT.ledger.length} ledger lines`,
    );

    // the operator's mistake
    const doomed: string[] = (await db.raw(`select id from payments order by random() limit ?`, [nDeleted])).rows.map(
      (r: { id: string }) => r.id,
    );
    const deleted = await db.transaction(async (trx) => {
      const lines = await trx.raw(
        `delete from ledger_entries where transaction_id in (select id from ledger_transactions where reference_id = any(?))`,
        [doomed],
      );
      await trx.raw(`delete from ledger_transactions where reference_id = any(?)`, [doomed]);
      await trx.raw(`delete from payment_status_changes where payment_id = any(?)`, [doomed]);
      const payments = await trx.raw(`delete from payments where id = any(?)`, [doomed]);
      return { payments: payments.rowCount, lines: lines.rowCount };
    });
    say(
      `mistake: deleted ${deleted.payments} payments and their ${deleted.lines} ledger lines by hand; ledger:check on the live database now: ${ledgerCheck(liveUrl).trim() || 'failed'}`,
    );

    // how far the archive was behind T (the RPO if both nodes were lost at T), then every WAL up to now archived
    const archiver = (
      await db.raw(
        `select last_archived_time, extract(epoch from (?::timestamptz - last_archived_time)) as behind from pg_stat_archiver`,
        [T],
      )
    ).rows[0];
    pgbackrest(h, ['check']);
    const r = await restore(h, T, Number(opts['restore-port']));
    say(`restore to T in ${r.seconds.toFixed(1)} s (fresh data directory ${r.dir}, port ${r.port})`);

    restored = knex({ client: 'pg', connection: r.url(DATABASE), pool: { min: 0, max: 2 } });
    const back = await snapshot(restored);
    const missing =
      atT.payments.filter((p, i) => back.payments[i] !== p).length +
      Math.max(0, atT.payments.length - back.payments.length);
    const same = {
      payments: back.payments.length === atT.payments.length && missing === 0,
      history: JSON.stringify(back.history) === JSON.stringify(atT.history),
      ledger: JSON.stringify(back.ledger) === JSON.stringify(atT.ledger),
    };
    const deletedBack = back.ids.filter((id) => doomed.includes(id)).length;
    const check = ledgerCheck(r.url(DATABASE));
    const ok =
      same.payments && same.history && same.ledger && deletedBack === doomed.length && /^ledger ok/.test(check);

    const rows = [
      ['backup (full, pgBackRest)', `${b.seconds.toFixed(1)} s`],
      ['restore to T (restore + WAL replay + promote)', `${r.seconds.toFixed(1)} s`],
      [
        `payments at T back exactly (every column)`,
        `${back.payments.length - missing}/${atT.payments.length}${same.payments ? '' : ' MISMATCH'}`,
      ],
      ['the 1,000 deleted ones among them', `${deletedBack}/${doomed.length}`],
      ['status history at T', same.history ? `${back.history.length} rows, identical` : 'DIFFERS'],
      ['ledger lines at T', same.ledger ? `${back.ledger.length} rows, identical` : 'DIFFERS'],
      ['npm run ledger:check on the restored database', check.trim() || 'FAILED'],
      [
        'WAL archive behind T (RPO if both nodes were lost at T)',
        `${Number(archiver.behind ?? NaN).toFixed(1)} s (last archived ${archiver.last_archived_time ? new Date(archiver.last_archived_time).toISOString() : 'never'})`,
      ],
      [
        'RPO bound for a total loss of both nodes',
        `archive_timeout = ${ARCHIVE_TIMEOUT_S} s (plus the push of one WAL segment)`,
      ],
    ];
    const w = Math.max(...rows.map((x) => x[0].length));
    process.stdout.write(
      `\n${rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n')}\n\ndrill:restore ${ok ? 'PASS' : 'FAIL'}\n`,
    );
    return ok ? 0 : 1;
  } finally {
    await restored?.destroy();
    await db?.destroy();
    await stopService(service);
    dropRestored(h);
    if (ours) await haDown(h);
  }
}

/** The whole service (npm start, compiled) on base…base+4, the machine's Redis under a prefix of its own. */
function startService(base: number, databaseUrl: string): number {
  const log = path.join(os.tmpdir(), `drill-restore-${base}.log`);
  const out = openSync(log, 'w');
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'build/scripts/start.js')], {
    cwd: PROJECT_ROOT,
    detached: true,
    stdio: ['ignore', out, out],
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: `drill-restore-${randomBytes(3).toString('hex')}`,
      PORT: String(base),
      ADMIN_PORT: String(base + 1),
      BASE_URL: `http://127.0.0.1:${base}`,
      SANDBOX_PROVIDER_PORT: String(base + 2),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${base + 2}`,
      CARD_VAULT_PORT: String(base + 3),
      CARD_VAULT_URL: `http://127.0.0.1:${base + 3}`,
      CARD_PROVIDER_PORT: String(base + 4),
      CARD_PROVIDER_URL: `http://127.0.0.1:${base + 4}`,
      SANDBOX_CALLBACK_DELAY_MS: '100',
      ADMIN_API_TOKEN: ADMIN_TOKEN,
      RATE_LIMIT_PER_MINUTE: '1000000',
      LOG_LEVEL: 'warn',
    },
  });
  child.unref();
  say(`service started (pid ${child.pid}, log ${log})`);
  return child.pid!;
}

async function stopService(pid: number): Promise<void> {
  if (!pidAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  await waitFor('the service to stop', () => !pidAlive(pid), 60_000).catch(() => process.kill(-pid, 'SIGKILL'));
}

/** The drill's merchant (chaos-merchant.ts drillMerchant), and its client. */
async function merchant(base: number): Promise<ServiceClient> {
  const admin = operatorApi(`http://127.0.0.1:${base + 1}`, ADMIN_TOKEN);
  return (await drillMerchant(admin, `http://127.0.0.1:${base}`, 'Restore drill', 'test')).client;
}

/** `n` payments the sandbox confirms, 16 at a time; resolves once every payment is final. */
async function load(client: ServiceClient, db: Knex, n: number): Promise<void> {
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const key = randomUUID();
      for (;;) {
        const res = await client
          .post(
            '/v1/payments',
            {
              amount: 1000 + Math.floor(Math.random() * 9000),
              currency: 'USD',
              method: 'mobile_money',
              operator: 'vodacom',
              phone: '243990000001',
              reference: `drill-${key}`,
            },
            { idempotencyKey: key },
          )
          .catch(() => ({ status: 0 }));
        if (res.status === 201) break;
        await sleep(500);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await waitFor(
    'every payment final',
    async () =>
      Number(
        (await db.raw(`select count(*) as c from payments where status in ('pending','processing')`)).rows[0].c,
      ) === 0,
    300_000,
  );
  say(`${n} payments created and confirmed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Every payment (whole rows), status change and ledger line, as text, in a fixed order. */
async function snapshot(db: Knex): Promise<{ ids: string[]; payments: string[]; history: string[]; ledger: string[] }> {
  const payments = (await db.raw(`select id, row_to_json(p)::text as j from payments p order by id`)).rows;
  const history = (await db.raw(`select row_to_json(s)::text as j from payment_status_changes s order by id`)).rows;
  const ledger = (await db.raw(`select row_to_json(e)::text as j from ledger_entries e order by e.id`)).rows;
  return {
    ids: payments.map((r: { id: string }) => r.id),
    payments: payments.map((r: { j: string }) => r.j),
    history: history.map((r: { j: string }) => r.j),
    ledger: ledger.map((r: { j: string }) => r.j),
  };
}

function ledgerCheck(databaseUrl: string): string {
  const r = spawnSync('npm', ['run', '-s', 'ledger:check'], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: databaseUrl },
  });
  return r.status === 0 ? r.stdout : `FAILED (exit ${r.status}): ${(r.stderr || '').split('\n').slice(-2).join(' ')}`;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`drill:restore failed: ${err.stack ?? err.message}\n`);
    process.exit(2);
  },
);
