/**
 * npm run bench:soak: an hour at steady load through the whole stack, and whether its memory
 * stays flat (docs/benchmarks.md#benchsoak).
 *
 * The stack is bench:e2e's: every Procfile line as its own process (the compiled build), on a
 * database of its own cloned from the migrated template, a private redis-server (or, with
 * --redis-url, a Redis database index and a queue prefix of its own), the sandbox provider
 * calling back after 5 ms, one webhook receiver answering 200 at once. It is warmed as bench:e2e
 * warms it (30 s at 100/s, VACUUM ANALYZE), then takes --rate payments a second, open loop, each
 * signed as it is sent, for --minutes: one bench:e2e step, whose row and figures it prints at the
 * end (lost and duplicate webhooks included).
 *
 * Every --sample-seconds from the soak's start (minute 0) to its end it reads:
 * - each process's RSS: VmRSS of /proc/<pid>/status, its children's added (the web's cluster
 *   workers, with WEB_CONCURRENCY > 1);
 * - each process's heap: the least V8 heap in use over the last --sample-seconds (read once a
 *   second), which a collection's timing does not move, as bench-soak-probe.mjs (preloaded into
 *   each process with `node --import`) writes it;
 * - Redis: INFO memory's used_memory and the database's key count;
 * - Postgres: each table's size with its indexes and TOAST (pg_total_relation_size, a
 *   partitioned table's partitions summed) and its indexes' (pg_indexes_size), and the
 *   database's (pg_database_size);
 * - the load over the window: payments created, other answers, POST p99.
 * It prints one line per sample, then per series its first, last and maximum values, its slope
 * (least squares, per hour) over the whole run and over its second half, its settled value (at
 * --settle-minutes) and its end value, and the verdict of bench-soak-series.ts: a series grows
 * without bound when its end (median of the last 3 readings) is above 1.5 × its settled value
 * (median of the 3 readings nearest --settle-minutes) and its second half's slope is still above
 * 10 % of the settled value per hour. The rule judges every process's RSS and heap, and a private
 * Redis' used_memory; tables keep their rows (retention works in days: docs/retention.md), so
 * their growth is shown and not judged. A run no longer than twice --settle-minutes is too short
 * to judge. Exit status 1 when a judged series grows without bound or a process of the stack
 * exited during the run; else 0.
 *
 * When the Postgres server's autovacuum is off (development servers), the soak runs VACUUM
 * ANALYZE on its database every --vacuum-minutes in its stead, so that dead rows do not pass for
 * growth; the run's first line says so.
 *
 * Options:
 *   --minutes 60            length of the soak (after the warm-up)
 *   --rate 20               payments a second
 *   --sample-seconds 60     one reading of every series this often
 *   --settle-minutes 10     the minute the stack counts as settled (JIT, pools, caches, BullMQ's
 *                           retained jobs: 10,000 per queue; Redis levels off after ~7 min at 20/s)
 *   --port 3980             the web; the sandbox takes port+1, the receiver port+2, the private
 *                           Redis port+3, the card sandboxes port+4 and port+5
 *   --database svc_bench_soak  (dropped and cloned from the template at start, dropped at the
 *                           end unless --keep)
 *   --redis-url URL         a Redis of the caller's instead of the private one, with --redis-db;
 *                           its memory is then the whole server's, shown and not judged
 *   --redis-db 0
 *   --callback-delay-ms 5   the sandbox's callback delay
 *   --log-level info        the services' LOG_LEVEL (their logs go to files, named at the start)
 *   --vacuum-minutes 10     with autovacuum off, VACUUM ANALYZE this often
 *   --json FILE             every sample, summary and the step's figures as JSON
 *   --keep                  keep the database
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { createMerchant } from '../shared/merchants/service';
import { createWebhook } from '../shared/webhooks/endpoints';
import { f0, f1, nowMs, percentile, runBench } from './bench-common';
import { issueKeys, receiver, signer, WARMUP } from './bench-e2e-load';
import { PostgresCpu, runStep, startService, type Measured, type Service } from './bench-e2e-measure';
import { say, sayStep, sayTableHeader, writeJson } from './bench-e2e-report';
import { GROWTH, summarize, type Point, type Summary } from './bench-soak-series';
import { createDatabase, SERVER_URL } from './lib/databases';
import { answers200, forkRole, need, pidAlive, stopAll, waitFor } from './lib/processes';
import { deleteQueueKeys, queuePrefix, startRedisServer, Teardown } from './lib/stack';
import { portOpen } from './local-services';
import { parseProcfile } from './start';

const ROOT = path.resolve(__dirname, '..');
const PROBE = path.join(__dirname, 'bench-soak-probe.mjs');
/** stopping the stack: SIGTERM, then SIGKILL for what is still running after this long */
const STOP_GRACE_MS = 30_000;
const MB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// options

interface Options {
  minutes: number;
  rate: number;
  sampleSeconds: number;
  settleMinutes: number;
  port: number;
  database: string;
  /** a Redis of the caller's (with its database index), else undefined: a private redis-server */
  redisUrl?: string;
  callbackDelayMs: number;
  logLevel: string;
  vacuumMinutes: number;
  json?: string;
  keep: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string', default: '60' },
      rate: { type: 'string', default: '20' },
      'sample-seconds': { type: 'string', default: '60' },
      'settle-minutes': { type: 'string', default: '10' },
      port: { type: 'string', default: '3980' },
      database: { type: 'string', default: 'svc_bench_soak' },
      'redis-url': { type: 'string' },
      'redis-db': { type: 'string', default: '0' },
      'callback-delay-ms': { type: 'string', default: '5' },
      'log-level': { type: 'string', default: 'info' },
      'vacuum-minutes': { type: 'string', default: '10' },
      json: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const positive = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a number above 0, got ${v}`);
    return n;
  };
  const whole = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${v}`);
    return n;
  };
  if (!/^[a-z_][a-z0-9_]*$/.test(values.database)) throw new Error('--database must be a plain lowercase name');
  let redisUrl: string | undefined;
  if (values['redis-url']) {
    const u = new URL(values['redis-url']);
    u.pathname = `/${whole('redis-db', values['redis-db'])}`;
    redisUrl = u.toString();
  } else if (process.argv.some((a) => a.startsWith('--redis-db')))
    throw new Error('--redis-db goes with --redis-url (the private Redis has its own database 0)');
  const minutes = positive('minutes', values.minutes);
  const sampleSeconds = positive('sample-seconds', values['sample-seconds']);
  if (sampleSeconds > minutes * 60) throw new Error('--sample-seconds must not exceed the run (--minutes × 60)');
  return {
    minutes,
    rate: positive('rate', values.rate),
    sampleSeconds,
    settleMinutes: whole('settle-minutes', values['settle-minutes']),
    port: whole('port', values.port),
    database: values.database,
    redisUrl,
    callbackDelayMs: whole('callback-delay-ms', values['callback-delay-ms']),
    logLevel: values['log-level'],
    vacuumMinutes: positive('vacuum-minutes', values['vacuum-minutes']),
    json: values.json,
    keep: values.keep,
  };
}

// ---------------------------------------------------------------------------------------------
// what is read at each sample

/** VmRSS of a process and of its live descendants, bytes; NaN once it is gone. */
export function rssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    let bytes = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) {
        const c = rssBytes(Number(child));
        if (Number.isFinite(c)) bytes += c;
      }
    }
    return bytes;
  } catch {
    return NaN;
  }
}

/** The least heap in use over the last window of each live process of `service` (the probe's files), summed; NaN: none. */
function heapBytes(probeDir: string, service: string): number {
  const name = new RegExp(`^${service}-(\\d+)\\.json$`);
  let sum = NaN;
  for (const f of readdirSync(probeDir)) {
    const pid = Number(name.exec(f)?.[1]);
    if (!pid || !pidAlive(pid)) continue;
    try {
      const { heapLeast } = JSON.parse(readFileSync(path.join(probeDir, f), 'utf8')) as { heapLeast: number };
      sum = (Number.isFinite(sum) ? sum : 0) + heapLeast;
    } catch {
      // being replaced right now: read at the next sample
    }
  }
  return sum;
}

/** Each table's size (partitions summed) and its indexes', and the database's, bytes. */
async function tableSizes(
  db: Measured['db'],
): Promise<{ tables: Record<string, { total: number; indexes: number }>; database: number }> {
  const { rows } = await db.raw(
    `select c.relname as name,
            sum(pg_total_relation_size(coalesce(t.relid, c.oid)))::bigint as total,
            sum(pg_indexes_size(coalesce(t.relid, c.oid)))::bigint as indexes
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       -- a partitioned table's partitions; a plain table has none, and is its own row
       left join lateral pg_partition_tree(c.oid) t on true
      where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
        and c.relname not like 'knex\\_%'
      group by c.relname`,
  );
  const tables: Record<string, { total: number; indexes: number }> = {};
  for (const r of rows as { name: string; total: string; indexes: string }[])
    tables[r.name] = { total: Number(r.total), indexes: Number(r.indexes) };
  const size = await db.raw('select pg_database_size(current_database())::bigint as n');
  return { tables, database: Number(size.rows[0].n) };
}

async function redisMemory(redis: Redis): Promise<{ usedMemory: number; keys: number }> {
  const info = await redis.info('memory');
  return {
    usedMemory: Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN),
    keys: await redis.dbsize(),
  };
}

interface Sample {
  minute: number;
  rss: Record<string, number>;
  heap: Record<string, number>;
  redis: { usedMemory: number; keys: number };
  tables: Record<string, { total: number; indexes: number }>;
  database: number;
  /** the load since the previous sample */
  load: { created: number; other: number; postP99: number; seconds: number };
}

// ---------------------------------------------------------------------------------------------
// the series and their table

interface Series {
  name: string;
  unit: 'MB' | 'keys';
  /** judged by the rule (else shown only) */
  judged: boolean;
  points: Point[];
}

function seriesOf(samples: Sample[], services: string[], privateRedis: boolean): Series[] {
  const mb = (get: (s: Sample) => number | undefined) =>
    samples.map((s) => ({ minute: s.minute, value: (get(s) ?? NaN) / MB }));
  const out: Series[] = [];
  for (const name of services) {
    out.push({ name: `${name} RSS`, unit: 'MB', judged: true, points: mb((s) => s.rss[name]) });
    out.push({ name: `${name} heap`, unit: 'MB', judged: true, points: mb((s) => s.heap[name]) });
  }
  out.push({
    name: `redis used_memory${privateRedis ? '' : ' (whole server)'}`,
    unit: 'MB',
    judged: privateRedis,
    points: mb((s) => s.redis.usedMemory),
  });
  out.push({
    name: 'redis keys',
    unit: 'keys',
    judged: false,
    points: samples.map((s) => ({ minute: s.minute, value: s.redis.keys })),
  });
  out.push({ name: 'postgres database', unit: 'MB', judged: false, points: mb((s) => s.database) });
  // the tables that changed over the run, largest first
  const last = samples[samples.length - 1];
  const tables = Object.keys(last?.tables ?? {})
    .filter((t) => samples[0].tables[t]?.total !== last.tables[t].total)
    .sort((a, b) => last.tables[b].total - last.tables[a].total);
  for (const t of tables) {
    out.push({ name: `table ${t}`, unit: 'MB', judged: false, points: mb((s) => s.tables[t]?.total) });
    out.push({ name: `table ${t} indexes`, unit: 'MB', judged: false, points: mb((s) => s.tables[t]?.indexes) });
  }
  return out;
}

function sayTable(rows: { series: Series; summary: Summary }[], canJudge: boolean): void {
  const width = Math.max(28, ...rows.map((r) => r.series.name.length + r.series.unit.length + 3));
  const n = (x: number, unit: string) => (unit === 'MB' ? f1(x) : f0(x)).padStart(9);
  say(
    `\n${'series'.padEnd(width)}  ${'first'.padStart(9)}  ${'last'.padStart(9)}  ${'max'.padStart(9)}  ${'slope/h'.padStart(9)}  ${'2nd half/h'.padStart(10)}  ${'settled'.padStart(9)}  ${'end'.padStart(9)}  verdict`,
  );
  for (const { series: s, summary: m } of rows) {
    const verdict = !s.judged ? '-' : !canJudge ? 'too short' : m.grows ? 'GROWS' : 'flat';
    say(
      `${`${s.name} (${s.unit})`.padEnd(width)}  ${n(m.first, s.unit)}  ${n(m.last, s.unit)}  ${n(m.max, s.unit)}  ${n(m.slopePerHour, s.unit)}  ${n(m.slopeSecondHalfPerHour, s.unit).padStart(10)}  ${n(m.settled, s.unit)}  ${n(m.end, s.unit)}  ${verdict}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// the run

async function soak(): Promise<void> {
  const o = options();
  const privateRedis = o.redisUrl === undefined;
  for (const p of [o.port, o.port + 1, o.port + 2, o.port + 4, o.port + 5, ...(privateRedis ? [o.port + 3] : [])])
    if (await portOpen(p)) throw new Error(`port ${p} is taken: choose another --port`);
  const teardown = new Teardown().onSignals(130);
  let exitCode: number;
  try {
    if (privateRedis) {
      need('redis-server', 'redis-server');
      const rs = await startRedisServer(o.port + 3);
      teardown.add(() => stopAll([rs]));
    }
    const redisUrl = o.redisUrl ?? `redis://127.0.0.1:${o.port + 3}/0`;
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
    teardown.add(() => redis.disconnect());
    const prefix = queuePrefix('soak');
    if (!privateRedis) teardown.add(() => deleteQueueKeys(redis, prefix));

    const database = await createDatabase(o.database, { replace: true });
    if (!o.keep) teardown.add(() => database.drop());
    const probeDir = mkdtempSync(path.join(os.tmpdir(), 'bench-soak-probe-'));
    teardown.add(() => rmSync(probeDir, { recursive: true, force: true }));
    const logDir = mkdtempSync(path.join(os.tmpdir(), 'bench-soak-logs-'));
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      NODE_ENV: 'development',
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: o.logLevel,
      PORT: String(o.port),
      BASE_URL: `http://127.0.0.1:${o.port}`,
      SANDBOX_PROVIDER_PORT: String(o.port + 1),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${o.port + 1}`,
      SANDBOX_CALLBACK_DELAY_MS: String(o.callbackDelayMs),
      CARD_VAULT_PORT: String(o.port + 4),
      CARD_PROVIDER_PORT: String(o.port + 5),
      // the probe (bench-soak-probe.mjs): where it writes, and its window
      SOAK_PROBE_DIR: probeDir,
      SOAK_PROBE_MS: String(o.sampleSeconds * 1000),
    };
    delete env.ADMIN_PORT;
    delete env.WEB_CONCURRENCY;
    const config = loadConfig(env);
    const ctx = createContext({
      role: 'worker',
      name: 'bench-soak',
      config: { ...config, logLevel: 'silent' },
      poolMax: 2,
    });
    teardown.add(() => ctx.close());
    const autovacuum = (await ctx.db.raw('show autovacuum')).rows[0].autovacuum as string;

    const { child: receiverChild } = await forkRole(__filename, '--receiver', {
      ...process.env,
      RECEIVER_PORT: String(o.port + 2),
    });
    teardown.add(() => stopAll([receiverChild]));
    const merchant = await createMerchant(ctx.db, {
      name: 'Soak bench',
      fees: { USD: { percent_bps: 250, fixed: 10 } },
    });
    await createWebhook(ctx.db, {
      merchant_id: merchant.id,
      url: `http://127.0.0.1:${o.port + 2}/hook`,
      events: ['payment.*'],
      environment: 'test',
    });
    const keys = await issueKeys(ctx.db, merchant.id, config.secretsKeys, Math.max(WARMUP.rate, o.rate));

    // the stack: every Procfile line of the compiled build (built again first if a source is newer), the probe preloaded
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--if-stale'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
    let stopping = false;
    const exits: string[] = [];
    const services: Service[] = lines.map((l) => startService(l.name, l.command, env, logDir, ['--import', PROBE]));
    teardown.add(async () => {
      stopping = true;
      await stopAll(
        services.map((s) => s.child),
        'SIGTERM',
        STOP_GRACE_MS,
      );
    });
    for (const s of services)
      s.child.once('exit', (code, signal) => {
        if (stopping) return;
        exits.push(`${s.name} (${signal ?? code})`);
        process.stderr.write(`${s.name} exited (${signal ?? code}): ${s.tail()}\n`);
      });
    await waitFor(
      'the stack',
      async () => (await answers200(`http://127.0.0.1:${o.port}/health/ready`)) && (await portOpen(o.port + 1)),
      30_000,
    );

    const canJudge = o.settleMinutes < o.minutes / 2;
    say(
      `bench:soak: ${o.minutes} min at ${o.rate}/s after a warm-up of ${WARMUP.seconds} s at ${WARMUP.rate}/s; a sample every ${o.sampleSeconds} s; settled at minute ${o.settleMinutes}${canJudge ? '' : ` (a run of ${o.minutes} min is too short to judge: it needs more than ${2 * o.settleMinutes})`}`,
    );
    say(
      `stack: ${services.length} processes (${services.map((s) => s.name).join(', ')}), node ${process.version}, ${keys.length} API keys, LOG_LEVEL ${o.logLevel}; Redis ${redisUrl}${privateRedis ? ' (private)' : ''}, queue prefix ${prefix}; Postgres ${new URL(SERVER_URL).host}/${o.database}, autovacuum ${autovacuum}${autovacuum === 'on' ? '' : `: VACUUM ANALYZE every ${o.vacuumMinutes} min in its stead`}`,
    );
    say(`service logs: ${logDir}/<process>.log; heap probes: ${probeDir}`);

    const measured: Measured = {
      port: o.port,
      db: ctx.db,
      database: o.database,
      redis,
      redisNodes: [redis],
      prefix,
      pg: new PostgresCpu(ctx.db, o.database),
      receiver: receiverChild,
      sign: signer(keys),
      drainMaxS: 60,
      sustainedDrainS: 5,
    };
    await runStep(measured, WARMUP.rate, WARMUP.seconds, services);
    await ctx.db.raw('vacuum analyze');

    // the soak: one step, sampled as it runs
    const samples: Sample[] = [];
    let window = { created: 0, other: 0, latencies: [] as number[], from: nowMs() };
    const start = nowMs();
    const sample = async () => {
      const at = nowMs();
      const { tables, database: databaseSize } = await tableSizes(ctx.db);
      const s: Sample = {
        minute: (at - start) / 60_000,
        rss: Object.fromEntries(services.map((x) => [x.name, rssBytes(x.child.pid!)])),
        heap: Object.fromEntries(services.map((x) => [x.name, heapBytes(probeDir, x.name)])),
        redis: await redisMemory(redis),
        tables,
        database: databaseSize,
        load: {
          created: window.created,
          other: window.other,
          postP99: percentile(
            window.latencies.sort((a, b) => a - b),
            99,
          ),
          seconds: (at - window.from) / 1000,
        },
      };
      window = { created: 0, other: 0, latencies: [], from: at };
      samples.push(s);
      const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
      say(
        `minute ${f1(s.minute).padStart(5)}: ${s.load.created} created (${f1(s.load.created / (s.load.seconds || 1))}/s), ${s.load.other} other answers, POST p99 ${f0(s.load.postP99)} ms | RSS ${f0(sum(s.rss) / MB)} MB, heap ${f0(sum(s.heap) / MB)} MB in ${services.length} processes | Redis ${f1(s.redis.usedMemory / MB)} MB, ${s.redis.keys} keys | database ${f1(s.database / MB)} MB`,
      );
    };
    // one sample at a time: a slow one (a VACUUM holding a lock) is not overtaken by the next
    let sampling: Promise<void> = Promise.resolve();
    const takeSample = () =>
      (sampling = sampling.then(sample).catch((err: Error) => void say(`sample failed: ${err.message}`)));
    void takeSample();
    // the last sample is afterLoad's, as the load ends: a tick within half a period of that end is left to it
    const end = start + o.minutes * 60_000;
    const sampler = setInterval(
      () => nowMs() < end - o.sampleSeconds * 500 && void takeSample(),
      o.sampleSeconds * 1000,
    );
    const vacuum =
      autovacuum === 'on'
        ? undefined
        : setInterval(() => void ctx.db.raw('vacuum analyze').catch(() => undefined), o.vacuumMinutes * 60_000);
    const step = await runStep(measured, o.rate, o.minutes * 60, services, {
      onAnswer: (status, _body, _sentAt, latency) => {
        if (status === 201) window.created++;
        else window.other++;
        window.latencies.push(latency);
      },
      // the last sample as the load ends, before the drain
      afterLoad: async () => {
        clearInterval(sampler);
        clearInterval(vacuum);
        await takeSample();
      },
    });

    sayTableHeader();
    sayStep(step, { width: 0, redisScope: privateRedis ? '' : ' (whole Redis server)' });
    const rows = seriesOf(
      samples,
      services.map((s) => s.name),
      privateRedis,
    ).map((series) => ({ series, summary: summarize(series.points, o.minutes, o.settleMinutes) }));
    sayTable(rows, canJudge);
    const growing = canJudge ? rows.filter((r) => r.series.judged && r.summary.grows) : [];
    const reasons = [
      ...growing.map(
        (r) =>
          `${r.series.name} grows: ${f1(r.summary.settled)} → ${f1(r.summary.end)} ${r.series.unit}, ${f1(r.summary.slopeSecondHalfPerHour)} ${r.series.unit}/h over the second half`,
      ),
      ...exits.map((e) => `${e} exited during the run`),
    ];
    say('');
    if (reasons.length) say(`soak: FAIL (${reasons.join('; ')})`);
    else if (!canJudge)
      say(
        `soak: not judged (${o.minutes} min is too short for --settle-minutes ${o.settleMinutes}); no process exited`,
      );
    else
      say(
        `soak: PASS (no process's RSS or heap${privateRedis ? ", nor Redis' memory," : ''} above ${GROWTH.factor} × its settled value and still rising; no process exited)`,
      );
    if (o.json)
      writeJson(o.json, {
        options: o,
        rule: GROWTH,
        samples,
        series: rows.map((r) => ({ ...r.series, summary: r.summary })),
        step,
        exits,
      });
    exitCode = reasons.length ? 1 : 0;
  } finally {
    await teardown.run();
  }
  process.exit(exitCode);
}

runBench({ '--receiver': receiver }, soak);
