import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import http from 'node:http';
import { randomInt, randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import knex, { type Knex } from 'knex';
import { Redis } from 'ioredis';
import { ServiceClient, type ClientResponse } from '../shared/client/signing';
import { checkLedger } from '../shared/ledger/check';
import { portOpen } from './local-services';

/**
 * `npm run chaos -- --duration 300`: an operator's fault drill. It starts the whole service
 * (`npm start`: two web processes on one port, every pool) on its own ports, database and Redis
 * (a private `redis-server --save ""` when the machine has one, else a Redis database index of
 * REDIS_URL), then for the duration sends a steady load of payments, refunds and payouts on
 * sandbox numbers while it breaks things: `kill -9` of a random service process every few
 * seconds (the supervisor starts it again), one FLUSHDB of its Redis database, one Redis restart
 * (only of its own redis-server), and one cut of every Postgres connection of the service
 * (pg_terminate_backend, its database only). Then it waits for every object to be final and
 * every event delivered, and prints one table. Exit code 1 on anything lost or doubled, or a
 * ledger that does not balance.
 *
 * Options: --duration s (300), --base-port p (5200: web p, operator API p+1, sandbox p+2, Redis
 * p+3, webhook receiver p+4), --database-url (postgres://postgres@127.0.0.1:5432/svc_chaos),
 * --redis-url (only when no private redis-server may be started; must name its own database
 * index), --rate payments per second (4), --drain s (300: how long, after the load ends, every
 * object may take to be final and every event to be delivered).
 */

const ROOT = path.resolve(__dirname, '..');
const ADMIN_TOKEN = 'chaos-admin-token-0123456789';
const APP_NAME = 'chaos-drill';

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    'base-port': { type: 'string', default: process.env.CHAOS_BASE_PORT || '5200' },
    'database-url': { type: 'string', default: process.env.CHAOS_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/svc_chaos' },
    'redis-url': { type: 'string' },
    rate: { type: 'string', default: '4' },
    drain: { type: 'string', default: '300' },
  },
});
const durationS = Number(opts.duration);
const base = Number(opts['base-port']);
const rate = Number(opts.rate);
const drainS = Number(opts.drain);
for (const [name, v] of [['duration', durationS], ['base-port', base], ['rate', rate], ['drain', drainS]] as const) {
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
}
const ports = { web: base, admin: base + 1, sandbox: base + 2, redis: base + 3, receiver: base + 4 };
const logFile = path.join(os.tmpdir(), `chaos-${base}.log`);
const out = createWriteStream(logFile);
const say = (line: string) => process.stdout.write(`chaos | ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- the service under test

let redisServer: ChildProcess | null = null;
async function startRedis(): Promise<string> {
  if (opts['redis-url']) {
    const u = new URL(opts['redis-url']);
    if (!/^\/\d+$/.test(u.pathname) || u.pathname === '/0') throw new Error('--redis-url must name a Redis database index of its own (redis://host:port/N, N > 0)');
    return opts['redis-url'];
  }
  if (!existsSync('/usr/bin/redis-server') && !which('redis-server')) throw new Error('no redis-server on this machine: pass --redis-url redis://127.0.0.1:6379/N with a database index of its own');
  redisServer = spawn(which('redis-server') ?? '/usr/bin/redis-server', ['--port', String(ports.redis), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 50 && !(await portOpen(ports.redis)); i++) await sleep(100);
  return `redis://127.0.0.1:${ports.redis}/2`;
}
function which(bin: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The supervisor (`npm start`) and the pids it reports for each Procfile line. */
const pids = new Map<number, string>();
let supervisor: ChildProcess;
function startService(env: Record<string, string>): void {
  supervisor = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  const onData = (chunk: Buffer) => {
    out.write(chunk);
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const started = /^start \| (\S+) started \(pid (\d+)\)/.exec(line);
      if (started) pids.set(Number(started[2]), started[1]);
      const exited = /^start \| (\S+) exited/.exec(line);
      if (exited) for (const [pid, name] of pids) if (name === exited[1] && !alive(pid)) pids.delete(pid);
    }
  };
  supervisor.stdout!.on('data', onData);
  supervisor.stderr!.on('data', onData);
}
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
/** Service processes that may be killed: every pool, the web primary and its web processes (never the sandbox: it is the provider). */
function targets(): { pid: number; name: string }[] {
  const list: { pid: number; name: string }[] = [];
  for (const [pid, name] of pids) {
    if (name === 'sandbox-provider' || !alive(pid)) continue;
    list.push({ pid, name });
    if (name === 'web') {
      try {
        for (const child of execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n').map((s) => Number(s.trim())).filter(Boolean)) list.push({ pid: child, name: 'web (cluster)' });
      } catch {
        /* no children right now */
      }
    }
  }
  return list;
}

// ---------------------------------------------------------------- the merchant's side

const received = new Map<string, number>();
function startReceiver(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        const id = JSON.parse(Buffer.concat(chunks).toString()).id as string;
        received.set(id, (received.get(id) ?? 0) + 1);
      } catch {
        /* not an event */
      }
      res.writeHead(200).end();
    });
  });
  return new Promise((r) => server.listen(ports.receiver, '127.0.0.1', () => r(server)));
}

async function admin(method: string, route: string, body?: unknown): Promise<any> {
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${ports.admin}${route}`, {
        method,
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await res.json().catch(() => undefined);
      if (res.status < 300) return json;
      if (res.status < 500 || i > 20) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
    } catch (err) {
      if (i > 20) throw err;
    }
    await sleep(1000);
  }
}

interface Tally {
  requested: number;
  refused: number;
  /** why, by status and error code */
  why: Map<string, number>;
}
const tally: Record<'payments' | 'refunds' | 'payouts', Tally> = {
  payments: { requested: 0, refused: 0, why: new Map() },
  refunds: { requested: 0, refused: 0, why: new Map() },
  payouts: { requested: 0, refused: 0, why: new Map() },
};
function refuse(kind: keyof typeof tally, why: string) {
  tally[kind].refused++;
  tally[kind].why.set(why, (tally[kind].why.get(why) ?? 0) + 1);
}

/** How long a client keeps asking (a merchant's checkout would give up after about that). */
const RETRY_FOR_MS = 120_000;

/**
 * Sends one merchant request as a careful client would: on a network error or a 5xx it asks
 * again with the same Idempotency-Key (and reference), after Retry-After when given, for up to
 * RETRY_FOR_MS, unless `exists()` shows an earlier try already acted.
 */
async function send(kind: keyof typeof tally, call: (key: string) => Promise<ClientResponse>, exists: () => Promise<boolean>): Promise<void> {
  tally[kind].requested++;
  const key = randomUUID();
  let last = '';
  const giveUp = Date.now() + RETRY_FOR_MS;
  for (let attempt = 1; Date.now() < giveUp; attempt++) {
    let wait = Math.min(1000 * attempt, 5000);
    try {
      const res = await call(key);
      if (res.status === 201 || res.status === 200) return;
      last = `${res.status} ${res.body?.error?.code ?? ''}`.trim();
      if (res.status < 500 && res.status !== 409) return refuse(kind, last);
      const after = Number(res.headers.get('retry-after'));
      if (after > 0) wait = after * 1000;
    } catch (err) {
      // connection reset or refused: the request may or may not have acted
      last = (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    }
    await sleep(wait);
    if (await exists().catch(() => false)) return;
  }
  if (!(await exists().catch(() => false))) refuse(kind, `gave up after ${RETRY_FOR_MS / 1000} s: ${last}`);
}

const PHONES = ['243990000001', '243990000001', '243990000001', '243990000001', '243990000002', '243990000003', '243990000005', '243990000005', '243990000004', '243811234567'];

// ---------------------------------------------------------------- the drill

async function main() {
  const dbUrl = new URL(opts['database-url']);
  const dbName = dbUrl.pathname.slice(1);
  const redisUrl = await startRedis();
  say(`service on 127.0.0.1:${ports.web} (operator API :${ports.admin}), database ${dbName}, Redis ${redisUrl}${redisServer ? ' (private redis-server, no persistence)' : ''}; service log ${logFile}`);
  const receiver = await startReceiver();
  startService({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    PORT: String(ports.web),
    ADMIN_PORT: String(ports.admin),
    WEB_CONCURRENCY: '2',
    BASE_URL: `http://127.0.0.1:${ports.web}`,
    DATABASE_URL: opts['database-url'],
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: '{chaos}',
    SANDBOX_PROVIDER_PORT: String(ports.sandbox),
    SANDBOX_PROVIDER_URL: `http://127.0.0.1:${ports.sandbox}`,
    ADMIN_API_TOKEN: ADMIN_TOKEN,
    RATE_LIMIT_PER_MINUTE: '1000000',
    LOG_LEVEL: 'warn',
  });
  const db: Knex = knex({ client: 'pg', connection: { connectionString: opts['database-url'], application_name: APP_NAME }, pool: { min: 0, max: 4 } });

  for (let i = 0; i < 240 && !(await fetch(`http://127.0.0.1:${ports.web}/health/ready`).then((r) => r.ok).catch(() => false)); i++) await sleep(500);
  const merchant = await admin('POST', '/admin/merchants', { name: `Chaos ${new Date().toISOString()}`, fees: { USD: { percent_bps: 150, fixed: 5 }, CDF: { percent_bps: 150, fixed: 0 } } });
  const cred = await admin('POST', `/admin/merchants/${merchant.id}/credentials`, { environment: 'test', scope: 'full' });
  await admin('POST', '/admin/webhooks', { merchant_id: merchant.id, url: `http://127.0.0.1:${ports.receiver}/hook`, events: ['payment.*', 'refund.*', 'payout.*'], environment: 'test' });
  const client = new ServiceClient({ baseUrl: `http://127.0.0.1:${ports.web}`, apiKey: cred.api_key, secret: cred.secret });
  say(`merchant ${merchant.id}; load and faults for ${durationS} s`);

  const start = Date.now();
  const end = start + durationS * 1000;
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  const faults = { kills: 0, flush: 0, redisRestart: 0, pgCut: 0 };
  const killedBy = new Map<string, number>();

  // steady load: payments at --rate per second, a payout a second, a refund for a third of the succeeded payments
  const refunded = new Set<string>();
  const loops = [
    (async () => {
      for (let t = Date.now(); t < end; t += 1000 / rate) {
        await sleep(Math.max(0, t - Date.now()));
        const reference = `chaos-${randomUUID()}`;
        const body = { amount: randomInt(1_000, 50_000), currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: PHONES[randomInt(PHONES.length)], reference };
        track(send('payments', (key) => client.post('/v1/payments', body, { idempotencyKey: key }), async () => !!(await db('payments').where({ reference }).first('id'))));
      }
    })(),
    (async () => {
      await sleep(20_000);
      for (let t = Date.now(); t < end; t += 1000) {
        await sleep(Math.max(0, t - Date.now()));
        const reference = `chaos-${randomUUID()}`;
        const body = { amount: randomInt(100, 1_000), currency: 'USD', operator: 'airtel', phone: randomInt(5) === 0 ? '243990000005' : '243990000001', reference };
        track(send('payouts', (key) => client.post('/v1/payouts', body, { idempotencyKey: key }), async () => !!(await db('payouts').where({ reference }).first('id'))));
      }
    })(),
    (async () => {
      while (Date.now() < end) {
        await sleep(2000);
        const done = await db('payments').where({ merchant_id: merchant.id, status: 'succeeded' }).whereNotIn('id', [...refunded]).limit(50).select('id', 'amount_charged').catch(() => []);
        for (const p of done) {
          refunded.add(p.id);
          if (randomInt(3) !== 0) continue;
          const reason = `chaos-${randomUUID()}`;
          track(send('refunds', (key) => client.post(`/v1/payments/${p.id}/refund`, { amount: Math.max(1, Math.floor(p.amount_charged / 2)), reason }, { idempotencyKey: key }), async () => !!(await db('refunds').where({ reason }).first('id'))));
        }
      }
    })(),
    // kill -9 of a random service process every 3 to 7 s
    (async () => {
      await sleep(5000);
      while (Date.now() < end) {
        const list = targets();
        if (list.length) {
          const victim = list[randomInt(list.length)];
          try {
            process.kill(victim.pid, 'SIGKILL');
            faults.kills++;
            killedBy.set(victim.name, (killedBy.get(victim.name) ?? 0) + 1);
            out.write(`chaos | kill -9 ${victim.name} (pid ${victim.pid})\n`);
          } catch {
            /* already gone */
          }
        }
        await sleep(randomInt(3000, 7000));
      }
    })(),
    // one FLUSHDB of the service's Redis database, at a quarter of the run
    (async () => {
      await sleep(durationS * 250);
      const r = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
      r.on('error', () => undefined);
      await r.flushdb();
      r.disconnect();
      faults.flush++;
      say(`FLUSHDB of ${redisUrl}`);
    })(),
    // one Redis restart (its own redis-server only), at half the run
    (async () => {
      await sleep(durationS * 500);
      if (!redisServer) return say('Redis restart skipped: not a redis-server of this drill');
      const stopped = new Promise((res) => redisServer!.once('exit', res));
      const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null });
      r.on('error', () => undefined);
      await r.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
      r.disconnect();
      await stopped;
      await sleep(2000);
      redisServer = spawn(which('redis-server') ?? '/usr/bin/redis-server', ['--port', String(ports.redis), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      faults.redisRestart++;
      say('Redis restarted without persistence (every job lost), down 2 s');
    })(),
    // one cut of every Postgres connection of the service, at three quarters of the run
    (async () => {
      await sleep(durationS * 750);
      const pg = knex({ client: 'pg', connection: { connectionString: opts['database-url'].replace(/\/[^/]*$/, '/postgres'), application_name: APP_NAME }, pool: { min: 0, max: 1 } });
      const { rows } = await pg.raw(`select count(pg_terminate_backend(pid)) as n from pg_stat_activity where datname = ? and pid <> pg_backend_pid() and application_name <> ?`, [dbName, APP_NAME]);
      await pg.destroy();
      faults.pgCut++;
      say(`Postgres: ${rows[0].n} connections of ${dbName} terminated`);
    })(),
  ];
  await Promise.all(loops);
  await Promise.all([...inflight]);
  say(`load over after ${Math.round((Date.now() - start) / 1000)} s; waiting up to ${drainS} s for every object to be final and every event delivered`);

  // ---------------------------------------------------------------- the outcome
  const OPEN = { payments: ['pending', 'processing'], refunds: ['pending'], payouts: ['pending', 'processing'] };
  const openCount = async () => {
    let n = 0;
    for (const [table, open] of Object.entries(OPEN)) n += Number((await db(table).where({ merchant_id: merchant.id }).whereIn('status', open).count<{ n: string }[]>('* as n'))[0].n);
    return n;
  };
  const undelivered = async () => Number((await db('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id').where('e.merchant_id', merchant.id).where('d.status', 'pending').count<{ n: string }[]>('* as n'))[0].n);
  const drainBy = Date.now() + drainS * 1000;
  while (Date.now() < drainBy && ((await openCount().catch(() => 1)) > 0 || (await undelivered().catch(() => 1)) > 0)) await sleep(2000);
  // a delivery may have been received after its row was written
  await sleep(2000);

  const rows: string[][] = [];
  let bad = 0;
  for (const [table, open] of Object.entries(OPEN) as [keyof typeof OPEN, string[]][]) {
    const all = await db(table).where({ merchant_id: merchant.id }).select('id', 'status');
    const lost = all.filter((r) => open.includes(r.status)).length;
    const key = table === 'refunds' ? 'reason' : 'reference';
    const dupRequests = await db(table).where({ merchant_id: merchant.id }).groupBy(key).havingRaw('count(*) > 1').select(key);
    const dupPostings = await db('ledger_transactions').whereIn('reference_id', all.map((r) => r.id)).groupBy('kind', 'reference_id').havingRaw('count(*) > 1').select('reference_id');
    const dupEvents = await db('events').whereIn('object_id', all.map((r) => r.id)).whereIn('type', [`${table.slice(0, -1)}.succeeded`, `${table.slice(0, -1)}.failed`, `${table.slice(0, -1)}.cancelled`]).groupBy('object_id', 'type').havingRaw('count(*) > 1').select('object_id');
    const doubled = dupRequests.length + dupPostings.length + dupEvents.length;
    const byStatus = Object.entries(all.reduce<Record<string, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {})).map(([s, n]) => `${s} ${n}`).join(', ');
    rows.push([table, String(tally[table].requested), String(tally[table].refused), String(all.length), String(all.length - lost), String(lost), String(doubled), byStatus]);
    bad += lost + doubled;
  }
  const events = await db('events').where({ merchant_id: merchant.id }).where((q) => q.where('type', 'like', 'payment.%').orWhere('type', 'like', 'refund.%').orWhere('type', 'like', 'payout.%')).select('id');
  let once = 0;
  let more = 0;
  let never = 0;
  for (const e of events) {
    const n = received.get(e.id) ?? 0;
    if (n === 0) never++;
    else if (n === 1) once++;
    else more++;
  }
  const ledger = await checkLedger(db);
  bad += ledger.length;

  const table = [
    ['object', 'requested', 'refused', 'created', 'final', 'lost', 'doubled', 'final statuses'],
    ...rows,
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const kills = [...killedBy].map(([n, c]) => `${n} ${c}`).join(', ');
  process.stdout.write(
    [
      '',
      `chaos drill: ${durationS} s of load; faults: ${faults.kills} × kill -9 (${kills}), ${faults.flush} × Redis FLUSHDB, ${faults.redisRestart} × Redis restart, ${faults.pgCut} × Postgres connection cut`,
      line(table[0]),
      `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
      ...table.slice(1).map(line),
      ...Object.entries(tally).filter(([, t]) => t.refused).map(([k, t]) => `${k} refused: ${[...t.why].map(([w, n]) => `${w} × ${n}`).join(', ')}`),
      `events: ${events.length}; delivered once ${once}, more than once ${more}, never ${never}`,
      `ledger check: ${ledger.length === 0 ? 'balanced (every transaction sums to zero, every cached balance equals its entries)' : `${ledger.length} problems\n  ${ledger.slice(0, 10).join('\n  ')}`}`,
      bad === 0 && never === 0 ? 'result: nothing lost, nothing doubled' : `result: FAILED (${bad} lost, doubled or ledger problems; ${never} events never delivered)`,
      '',
    ].join('\n'),
  );

  await db.destroy();
  receiver.close();
  supervisor.kill('SIGINT');
  await Promise.race([new Promise((r) => supervisor.once('exit', r)), sleep(45_000)]);
  if (supervisor.exitCode === null) supervisor.kill('SIGKILL');
  redisServer?.kill('SIGTERM');
  out.end();
  process.exit(bad === 0 && never === 0 ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`chaos failed: ${err.stack ?? err.message}\n`);
  supervisor?.kill('SIGINT');
  redisServer?.kill('SIGTERM');
  process.exit(2);
});
