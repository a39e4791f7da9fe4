import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
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
import { scanLogForLeaks } from './chaos-leaks';
import { ANSWER_BOUND_MS, probeUntil, type PartitionProbes } from './chaos-partition';
import { portInUseIn, takenPorts } from './chaos-ports';
import { compareWithProvider, type ProviderComparison } from './chaos-provider';
import { startTcpProxy } from './chaos-proxy';
import { countOf, Replays, SignedPoster, type Identity, type SentPost } from './chaos-replays';

/**
 * `npm run chaos -- --duration 300`: an operator's fault drill. It starts the whole service
 * (`npm start`: two web processes on one port, every pool) on its own ports, database and Redis
 * (a private `redis-server --save ""` when the machine has one, else a Redis database index of
 * REDIS_URL), with its Postgres connections through a TCP proxy of its own, then for the
 * duration sends a steady load of payments, refunds and payouts on sandbox numbers while it
 * breaks things: `kill -9` of a random service process every few seconds (the supervisor starts
 * it again; none during the partition below), one FLUSHDB of its Redis database, one Redis
 * restart (only of its own redis-server), one cut of every Postgres connection of the service
 * (pg_terminate_backend, its database only), and 5 s later one 20-second Postgres partition (the
 * proxy forwards nothing and answers no new connection) during which it times requests of its own. Meanwhile it sends some
 * of its accepted signed POSTs again, byte for byte, with a new Idempotency-Key, with none and
 * with the first one. Then it waits for every object to be final and every event delivered,
 * stops the service and prints two tables: the objects (requested, refused, created, final,
 * lost, doubled) and the checks:
 *   webhook events      every event delivered
 *   ledger              every transaction sums to zero, every cached balance equals its entries
 *   provider: <object>  each final status agrees with what the sandbox provider says it did
 *                       (succeeded, or failed/cancelled/expired/never taken); also how many
 *                       create requests it got per operation (repeats carry the same key)
 *   signed replays      every replay with another key or none refused (409 request-replayed)
 *                       and none acted; with the first key, the first answer again
 *   Postgres partition  every request answered within 7 s (5 s + 2 s slack): 2xx, 4xx, or 503
 *                       service-unavailable with Retry-After; none hung or dropped
 *   log leaks           no full phone number, card number, API key, secret or signature in
 *                       any process's log (the drill looks up phone numbers in four spellings)
 * Exit code 1 on anything lost or doubled or any failed check; 2 when the drill cannot run (a
 * port taken, the service not starting).
 *
 * Ports, all from --base-port p (each checked free before anything starts): p web (merchant
 * API, provider callbacks), p+1 operator API, p+2 sandbox mobile-money provider, p+3 private
 * redis-server, p+4 webhook receiver, p+5 card vault sandbox, p+6 card acquirer sandbox, p+7
 * Postgres proxy.
 *
 * Options: --duration s (300), --base-port p (5200), --database-url
 * (postgres://postgres@127.0.0.1:5432/svc_chaos), --redis-url (only when no private
 * redis-server may be started; must name its own database index), --rate payments per second
 * (4), --drain s (300: how long, after the load ends, every object may take to be final and
 * every event to be delivered). The service's output goes to $TMPDIR/chaos-<p>.log.
 */

const ROOT = path.resolve(__dirname, '..');
const ADMIN_TOKEN = 'chaos-admin-token-0123456789';
const SANDBOX_PROVIDER_KEY = 'chaos-sandbox-provider-key';
const APP_NAME = 'chaos-drill';
const PARTITION_S = 20;
/** Spellings of one number, looked up so that a number left whole in the access log is found. */
const PHONE_SPELLINGS = ['0812345678', '%2B243%2081%20234%205678', '243-81-234-5678', '(0)81.234.56.78'];

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
/** What each port is for, in --base-port order (p, p+1, …). */
const PORT_ROLES = {
  web: 'web (merchant API)',
  admin: 'operator API',
  sandbox: 'sandbox mobile-money provider',
  redis: 'private redis-server',
  receiver: 'webhook receiver',
  cardVault: 'card vault sandbox',
  cardAcquirer: 'card acquirer sandbox',
  pgProxy: 'Postgres proxy',
} as const;
type PortRole = keyof typeof PORT_ROLES;
const ports = Object.fromEntries(Object.keys(PORT_ROLES).map((role, i) => [role, base + i])) as Record<PortRole, number>;
if (ports.pgProxy > 65535) throw new Error(`--base-port must leave room for ${Object.keys(PORT_ROLES).length} ports below 65536`);
const roleOf = (port: number) => Object.entries(ports).find(([, p]) => p === port)?.[0] as PortRole | undefined;

const logFile = path.join(os.tmpdir(), `chaos-${base}.log`);
/** opened once the ports are known free (a drill refused must not empty the log of one running) */
let out: WriteStream | undefined;
/** Writes to the log file, until it is closed for the scan. */
const toLog = (chunk: Buffer | string) => {
  if (out && !out.writableEnded) out.write(chunk);
};
const say = (line: string) => process.stdout.write(`chaos | ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- the service under test

let redisServer: ChildProcess | null = null;
function spawnRedisServer(): ChildProcess {
  const child = spawn(which('redis-server') ?? '/usr/bin/redis-server', ['--port', String(ports.redis), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', toLog);
  child.stderr!.on('data', toLog);
  return child;
}
async function startRedis(): Promise<string> {
  if (opts['redis-url']) {
    const u = new URL(opts['redis-url']);
    if (!/^\/\d+$/.test(u.pathname) || u.pathname === '/0') throw new Error('--redis-url must name a Redis database index of its own (redis://host:port/N, N > 0)');
    return opts['redis-url'];
  }
  if (!existsSync('/usr/bin/redis-server') && !which('redis-server')) throw new Error('no redis-server on this machine: pass --redis-url redis://127.0.0.1:6379/N with a database index of its own');
  redisServer = spawnRedisServer();
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

/** Exit code 2, everything the drill started stopped: the drill could not run. */
function cannotRun(reason: string): never {
  process.stderr.write(`chaos failed: ${reason}\n`);
  supervisor?.kill('SIGINT');
  redisServer?.kill('SIGTERM');
  process.exit(2);
}
const portsTaken = (taken: number[]) => `${taken.map((port) => `port ${port} (${PORT_ROLES[roleOf(port)!] ?? 'not one of the drill'})`).join(', ')} taken: choose another --base-port`;

/** Every port the drill will open must be free before anything starts. */
async function refuseTakenPorts(): Promise<void> {
  const needed = Object.fromEntries(Object.entries(ports).filter(([role]) => role !== 'redis' || !opts['redis-url']));
  const taken = await takenPorts(needed);
  if (taken.length) cannotRun(portsTaken(taken.map(({ port }) => port)));
}

/** The supervisor (`npm start`) and the pids it reports for each Procfile line. */
const pids = new Map<number, string>();
let supervisor: ChildProcess | undefined;
function startService(env: Record<string, string>): ChildProcess {
  const child = (supervisor = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let buf = '';
  const onData = (chunk: Buffer) => {
    toLog(chunk);
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const started = /^start \| (\S+) started \(pid (\d+)\)/.exec(line);
      if (started) pids.set(Number(started[2]), started[1]);
      const exited = /^start \| (\S+) exited/.exec(line);
      if (exited) for (const [pid, name] of pids) if (name === exited[1] && !alive(pid)) pids.delete(pid);
      const inUse = portInUseIn(line);
      if (inUse !== undefined) cannotRun(`a service process could not listen: ${portsTaken([inUse])}`);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return child;
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
/** Stops the service gracefully (SIGKILL after 45 s) and its Redis; resolves once the log file is complete. */
async function stopService(service: ChildProcess): Promise<void> {
  service.kill('SIGINT');
  await Promise.race([new Promise((r) => service.once('exit', r)), sleep(45_000)]);
  if (service.exitCode === null) service.kill('SIGKILL');
  redisServer?.kill('SIGTERM');
  await new Promise((r) => out!.end(r));
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
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(ports.receiver, '127.0.0.1', () => resolve(server));
  });
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

type Kind = 'payments' | 'refunds' | 'payouts';
interface Tally {
  requested: number;
  refused: number;
  /** why, by status and error code */
  why: Map<string, number>;
}
const tally: Record<Kind, Tally> = {
  payments: { requested: 0, refused: 0, why: new Map() },
  refunds: { requested: 0, refused: 0, why: new Map() },
  payouts: { requested: 0, refused: 0, why: new Map() },
};
function refuse(kind: Kind, why: string) {
  tally[kind].refused++;
  tally[kind].why.set(why, (tally[kind].why.get(why) ?? 0) + 1);
}
const answerCode = (res: ClientResponse) => `${res.status} ${res.body?.error?.code ?? ''}`.trim();

/** One merchant POST: what it creates is found again by `identity`. */
interface MerchantPost {
  kind: Kind;
  path: string;
  body: unknown;
  identity: Identity;
}

/** How long a client keeps asking (a merchant's checkout would give up after about that). */
const RETRY_FOR_MS = 120_000;

/**
 * Sends one merchant request as a careful client would: on a network error or a 5xx it asks
 * again with the same Idempotency-Key (and body), after Retry-After when given, for up to
 * RETRY_FOR_MS, unless an earlier try already created its object. The accepted request as sent.
 */
async function send(post: MerchantPost, poster: SignedPoster, db: Knex): Promise<SentPost | undefined> {
  const { kind } = post;
  tally[kind].requested++;
  const key = randomUUID();
  const raw = JSON.stringify(post.body);
  const exists = async () => (await countOf(db, post.identity).catch(() => 0)) > 0;
  let last = '';
  const giveUp = Date.now() + RETRY_FOR_MS;
  for (let attempt = 1; Date.now() < giveUp; attempt++) {
    let wait = Math.min(1000 * attempt, 5000);
    const timestamp = Math.floor(Date.now() / 1000);
    try {
      const answer = await poster.post(post.path, raw, key, timestamp);
      if (answer.status === 201 || answer.status === 200) return { path: post.path, raw, timestamp, key, identity: post.identity, answer };
      last = answerCode(answer);
      if (answer.status < 500 && answer.status !== 409) return void refuse(kind, last);
      const after = Number(answer.headers.get('retry-after'));
      if (after > 0) wait = after * 1000;
    } catch (err) {
      // connection reset or refused: the request may or may not have acted
      last = (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    }
    await sleep(wait);
    if (await exists()) return undefined;
  }
  if (!(await exists())) refuse(kind, `gave up after ${RETRY_FOR_MS / 1000} s: ${last}`);
  return undefined;
}

/** One try, timed by the partition check rather than retried; a refusal is tallied like the load's. */
async function sendOnce(post: MerchantPost, poster: SignedPoster): Promise<ClientResponse> {
  tally[post.kind].requested++;
  try {
    const answer = await poster.post(post.path, JSON.stringify(post.body), randomUUID());
    if (answer.status >= 300) refuse(post.kind, `during the partition: ${answerCode(answer)}`);
    return answer;
  } catch (err) {
    refuse(post.kind, 'during the partition: no answer');
    throw err;
  }
}

const PHONES = ['243990000001', '243990000001', '243990000001', '243990000001', '243990000002', '243990000003', '243990000005', '243990000005', '243990000004', '243811234567'];
/** Of the accepted requests of each kind, one in this many is replayed. */
const REPLAY_ONE_IN: Record<Kind, number> = { payments: 10, refunds: 1, payouts: 5 };

function paymentPost(): MerchantPost {
  const reference = `chaos-${randomUUID()}`;
  return {
    kind: 'payments',
    path: '/v1/payments',
    body: { amount: randomInt(1_000, 50_000), currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: PHONES[randomInt(PHONES.length)], reference },
    identity: { table: 'payments', column: 'reference', value: reference },
  };
}
function payoutPost(): MerchantPost {
  const reference = `chaos-${randomUUID()}`;
  return {
    kind: 'payouts',
    path: '/v1/payouts',
    body: { amount: randomInt(100, 1_000), currency: 'USD', operator: 'airtel', phone: randomInt(5) === 0 ? '243990000005' : '243990000001', reference },
    identity: { table: 'payouts', column: 'reference', value: reference },
  };
}
function refundPost(paymentId: string, amount: number): MerchantPost {
  const reason = `chaos-${randomUUID()}`;
  return { kind: 'refunds', path: `/v1/payments/${paymentId}/refund`, body: { amount, reason }, identity: { table: 'refunds', column: 'reason', value: reason } };
}

// ---------------------------------------------------------------- the outcome

function formatTable(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)];
}
const counted = (m: Map<string, number>) => [...m].map(([what, n]) => `${what} × ${n}`).join(', ');

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
function providerCheck(table: Kind, c: ProviderComparison): Check {
  const { once, more, none } = c.requests;
  return {
    name: `provider: ${table}`,
    ok: c.mismatches.length === 0,
    detail: `${c.asked} final asked, ${c.mismatches.length} disagree; create requests per operation: 1 for ${once}, more (same key) for ${more}, none for ${none}`,
  };
}
function replayCheck(r: Replays['tally']): Check {
  return {
    name: 'signed replays',
    ok: r.tried > 0 && r.refused === r.tried && r.acted === 0 && r.sameKeyAnswered === r.sameKey,
    detail: `tried ${r.tried} / refused ${r.refused} / acted ${r.acted}; same key: ${r.sameKeyAnswered} of ${r.sameKey} got the first answer${r.otherAnswers.size ? `; other answers: ${counted(r.otherAnswers)}` : ''}`,
  };
}
function partitionCheck(p: PartitionProbes | undefined): Check {
  if (!p) return { name: 'Postgres partition', ok: false, detail: 'not run' };
  return {
    name: 'Postgres partition',
    ok: p.total > 0 && p.withinBound === p.total,
    detail: `answered within ${ANSWER_BOUND_MS / 1000} s: ${p.withinBound}/${p.total}, longest answer ${(p.maxAnswerMs / 1000).toFixed(1)} s, hung ${p.hung}, dropped ${p.dropped}; ${counted(p.answers)}`,
  };
}

// ---------------------------------------------------------------- the drill

async function main() {
  await refuseTakenPorts();
  out = createWriteStream(logFile);
  const dbUrl = new URL(opts['database-url']);
  const dbName = dbUrl.pathname.slice(1);
  const serviceDbUrl = new URL(dbUrl);
  serviceDbUrl.host = `127.0.0.1:${ports.pgProxy}`;
  const proxy = await startTcpProxy(ports.pgProxy, { host: dbUrl.hostname, port: Number(dbUrl.port || 5432) });
  const redisUrl = await startRedis();
  say(`service on 127.0.0.1:${ports.web} (operator API :${ports.admin}), database ${dbName} through 127.0.0.1:${ports.pgProxy}, Redis ${redisUrl}${redisServer ? ' (private redis-server, no persistence)' : ''}; service log ${logFile}`);
  const receiver = await startReceiver();
  const service = startService({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    PORT: String(ports.web),
    ADMIN_PORT: String(ports.admin),
    WEB_CONCURRENCY: '2',
    BASE_URL: `http://127.0.0.1:${ports.web}`,
    DATABASE_URL: serviceDbUrl.href,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: '{chaos}',
    SANDBOX_PROVIDER_PORT: String(ports.sandbox),
    SANDBOX_PROVIDER_URL: `http://127.0.0.1:${ports.sandbox}`,
    SANDBOX_PROVIDER_API_KEY: SANDBOX_PROVIDER_KEY,
    CARD_VAULT_PORT: String(ports.cardVault),
    CARD_VAULT_URL: `http://127.0.0.1:${ports.cardVault}`,
    CARD_PROVIDER_PORT: String(ports.cardAcquirer),
    CARD_PROVIDER_URL: `http://127.0.0.1:${ports.cardAcquirer}`,
    ADMIN_API_TOKEN: ADMIN_TOKEN,
    RATE_LIMIT_PER_MINUTE: '1000000',
    // info: the access log (one line per request) is part of what the leak scan reads
    LOG_LEVEL: 'info',
  });
  const db: Knex = knex({ client: 'pg', connection: { connectionString: opts['database-url'], application_name: APP_NAME }, pool: { min: 0, max: 4 } });

  for (let i = 0; i < 240 && !(await fetch(`http://127.0.0.1:${ports.web}/health/ready`).then((r) => r.ok).catch(() => false)); i++) await sleep(500);
  const merchant = await admin('POST', '/admin/merchants', { name: `Chaos ${new Date().toISOString()}`, fees: { USD: { percent_bps: 150, fixed: 5 }, CDF: { percent_bps: 150, fixed: 0 } } });
  const cred = await admin('POST', `/admin/merchants/${merchant.id}/credentials`, { environment: 'test', scope: 'full' });
  await admin('POST', '/admin/webhooks', { merchant_id: merchant.id, url: `http://127.0.0.1:${ports.receiver}/hook`, events: ['payment.*', 'refund.*', 'payout.*'], environment: 'test' });
  const client = new ServiceClient({ baseUrl: `http://127.0.0.1:${ports.web}`, apiKey: cred.api_key, secret: cred.secret });
  const poster = new SignedPoster(client);
  const replays = new Replays(poster, db);
  const lookups = new Map<string, number>();
  for (const spelling of PHONE_SPELLINGS) {
    const what = await client.get(`/v1/phone-numbers/${spelling}`).then(answerCode, () => 'no answer');
    lookups.set(what, (lookups.get(what) ?? 0) + 1);
  }
  say(`merchant ${merchant.id}; load and faults for ${durationS} s`);

  const start = Date.now();
  const end = start + durationS * 1000;
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  const accepted: Record<Kind, number> = { payments: 0, refunds: 0, payouts: 0 };
  /** Sends `post` as a careful client; one accepted request in REPLAY_ONE_IN is then replayed. */
  const load = (post: MerchantPost) =>
    track(
      send(post, poster, db).then((sent) => {
        if (sent && ++accepted[post.kind] % REPLAY_ONE_IN[post.kind] === 0) return replays.replay(sent);
      }),
    );
  const faults = { kills: 0, flush: 0, redisRestart: 0, pgCut: 0, partition: 0 };
  const killedBy = new Map<string, number>();
  let partition: PartitionProbes | undefined;
  /** no kill while Postgres is partitioned: a dropped connection would be the drill's doing, not a wait */
  let partitioned = false;

  // steady load: payments at --rate per second, a payout a second, a refund for a third of the succeeded payments
  const refunded = new Set<string>();
  const loops = [
    (async () => {
      for (let t = Date.now(); t < end; t += 1000 / rate) {
        await sleep(Math.max(0, t - Date.now()));
        load(paymentPost());
      }
    })(),
    (async () => {
      await sleep(20_000);
      for (let t = Date.now(); t < end; t += 1000) {
        await sleep(Math.max(0, t - Date.now()));
        load(payoutPost());
      }
    })(),
    (async () => {
      while (Date.now() < end) {
        await sleep(2000);
        const done = await db('payments').where({ merchant_id: merchant.id, status: 'succeeded' }).whereNotIn('id', [...refunded]).limit(50).select('id', 'amount_charged').catch(() => []);
        for (const p of done) {
          refunded.add(p.id);
          if (randomInt(3) === 0) load(refundPost(p.id, Math.max(1, Math.floor(p.amount_charged / 2))));
        }
      }
    })(),
    // kill -9 of a random service process every 3 to 7 s, except during the partition
    (async () => {
      await sleep(5000);
      while (Date.now() < end) {
        const list = partitioned ? [] : targets();
        if (list.length) {
          const victim = list[randomInt(list.length)];
          try {
            process.kill(victim.pid, 'SIGKILL');
            faults.kills++;
            killedBy.set(victim.name, (killedBy.get(victim.name) ?? 0) + 1);
            toLog(`chaos | kill -9 ${victim.name} (pid ${victim.pid})\n`);
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
      redisServer = spawnRedisServer();
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
    // one Postgres partition, 5 s after the cut: requests of every kind, each timed, while it lasts
    (async () => {
      await sleep(durationS * 750 + 5000);
      const refundable: string[] = await db('payments').where({ merchant_id: merchant.id, status: 'succeeded' }).limit(10).pluck('id');
      say(`Postgres partitioned for ${PARTITION_S} s (its proxy forwards nothing)`);
      partitioned = true;
      let i = 0;
      partition = await probeUntil(proxy.partition(PARTITION_S * 1000), {
        'POST /v1/payments': () => sendOnce(paymentPost(), poster),
        'GET /v1/balance': () => client.get('/v1/balance'),
        ...(refundable.length ? { 'POST refund': () => sendOnce(refundPost(refundable[i++ % refundable.length], 1), poster) } : {}),
      });
      partitioned = false;
      faults.partition++;
      say('Postgres partition over');
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

  const objectRows: string[][] = [];
  const checks: Check[] = [];
  const mismatches: string[] = [];
  let lostOrDoubled = 0;
  for (const [table, open] of Object.entries(OPEN) as [Kind, string[]][]) {
    const all = await db(table).where({ merchant_id: merchant.id }).select('id', 'status', 'operator');
    const lost = all.filter((r) => open.includes(r.status)).length;
    const key = table === 'refunds' ? 'reason' : 'reference';
    const dupRequests = await db(table).where({ merchant_id: merchant.id }).groupBy(key).havingRaw('count(*) > 1').select(key);
    const dupPostings = await db('ledger_transactions').whereIn('reference_id', all.map((r) => r.id)).groupBy('kind', 'reference_id').havingRaw('count(*) > 1').select('reference_id');
    const dupEvents = await db('events').whereIn('object_id', all.map((r) => r.id)).whereIn('type', [`${table.slice(0, -1)}.succeeded`, `${table.slice(0, -1)}.failed`, `${table.slice(0, -1)}.cancelled`]).groupBy('object_id', 'type').havingRaw('count(*) > 1').select('object_id');
    const doubled = dupRequests.length + dupPostings.length + dupEvents.length;
    const byStatus = Object.entries(all.reduce<Record<string, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {})).map(([s, n]) => `${s} ${n}`).join(', ');
    objectRows.push([table, String(tally[table].requested), String(tally[table].refused), String(all.length), String(all.length - lost), String(lost), String(doubled), byStatus]);
    lostOrDoubled += lost + doubled;
    const comparison = await compareWithProvider(`http://127.0.0.1:${ports.sandbox}`, SANDBOX_PROVIDER_KEY, all);
    checks.push(providerCheck(table, comparison));
    mismatches.push(...comparison.mismatches);
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
  checks.unshift(
    { name: 'webhook events', ok: never === 0, detail: `${events.length} events: delivered once ${once}, more than once ${more}, never ${never}` },
    { name: 'ledger', ok: ledger.length === 0, detail: ledger.length === 0 ? 'balanced (every transaction sums to zero, every cached balance equals its entries)' : `${ledger.length} problems` },
  );
  checks.push(replayCheck(replays.tally), partitionCheck(partition));

  await db.destroy();
  receiver.close();
  await stopService(service);
  proxy.close();
  const scan = await scanLogForLeaks(logFile, { values: [cred.api_key, cred.secret, cred.webhook_secret, ADMIN_TOKEN], signatures: poster.signatures });
  checks.push({ name: 'log leaks', ok: scan.leaks === 0, detail: `${scan.lines} lines scanned, ${scan.leaks} leaks; phone number lookups: ${counted(lookups)}` });

  const failed = checks.filter((c) => !c.ok).map((c) => c.name);
  const kills = [...killedBy].map(([n, c]) => `${n} ${c}`).join(', ');
  process.stdout.write(
    [
      '',
      `chaos drill: ${durationS} s of load; faults: ${faults.kills} × kill -9 (${kills}), ${faults.flush} × Redis FLUSHDB, ${faults.redisRestart} × Redis restart, ${faults.pgCut} × Postgres connection cut, ${faults.partition} × Postgres partition (${PARTITION_S} s)`,
      ...formatTable([['object', 'requested', 'refused', 'created', 'final', 'lost', 'doubled', 'final statuses'], ...objectRows]),
      ...Object.entries(tally).filter(([, t]) => t.refused).map(([k, t]) => `${k} refused: ${counted(t.why)}`),
      '',
      ...formatTable([['check', 'result', 'detail'], ...checks.map((c) => [c.name, c.ok ? 'ok' : 'FAILED', c.detail])]),
      ...ledger.slice(0, 10).map((p) => `ledger: ${p}`),
      ...mismatches.slice(0, 5).map((m) => `provider disagrees: ${m}`),
      ...scan.examples.map((e) => `leak: ${e}`),
      lostOrDoubled === 0 && failed.length === 0 ? 'result: nothing lost, nothing doubled, every check passed' : `result: FAILED (${lostOrDoubled} lost or doubled${failed.length ? `; failed checks: ${failed.join(', ')}` : ''})`,
      `service log: ${logFile}`,
      '',
    ].join('\n'),
  );
  process.exit(lostOrDoubled === 0 && failed.length === 0 ? 0 : 1);
}

main().catch((err) => cannotRun(err.code === 'EADDRINUSE' ? portsTaken([err.port]) : (err.stack ?? err.message)));
