import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { answers200, exited, sleep, spawnLogged, waitFor } from './lib/processes';
import { setUpStack } from './lib/stack';

/**
 * `npm run bench:idle`: what the whole stack costs when nothing happens. Runs `npm start`'s
 * supervisor (compiled, as in production) on a fresh database and ports of its own, times
 * `/health/ready` from the start, lets it settle, then reads every process of the stack over
 * --seconds from /proc: resident memory (RSS, and PSS: pages shared between processes, such as
 * node's own code, counted once; their sum is what the machine gives the stack) and CPU (% of
 * one core). Prints one line per process and the totals, then stops the stack.
 *
 * Options: --port 3950 (the web; the sandboxes take port+1 … port+3), --seconds 60, --settle 150
 * (each pool's first periodic runs, up to a minute in, load and compile code of their own, and
 * V8's memory reducer then runs full collections for a minute or so: a steady stack is measured),
 * --redis-url redis://127.0.0.1:6379/9.
 */

const TICK_MS = 10; // USER_HZ: /proc's CPU times are in hundredths of a second

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '3950' },
    seconds: { type: 'string', default: '60' },
    settle: { type: 'string', default: '150' },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379/9' },
  },
});
const port = Number(values.port);
const seconds = Number(values.seconds);

interface Proc {
  pid: number;
  command: string;
}

/** The processes of the group `pgid` (the supervisor and every child it started). */
function group(pgid: number): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue;
      out.push({ pid, command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() });
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
};
const kb = (file: string, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(file, 'utf8'))?.[1] ?? 0);

async function main(): Promise<void> {
  const stack = await setUpStack({
    env: (databaseUrl, prefix) => ({
      ...(process.env as Record<string, string>),
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: databaseUrl,
      REDIS_URL: values['redis-url'],
      QUEUE_PREFIX: prefix,
      SANDBOX_PROVIDER_PORT: String(port + 1),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${port + 1}`,
      CARD_VAULT_PORT: String(port + 2),
      CARD_VAULT_URL: `http://127.0.0.1:${port + 2}`,
      CARD_PROVIDER_PORT: String(port + 3),
      CARD_PROVIDER_URL: `http://127.0.0.1:${port + 3}`,
    }),
  });
  // the stack's output, read after the measurement: a process restarted meanwhile voids the figures
  const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'bench-idle-')), 'stack.log');
  const started = performance.now();
  const { child: supervisor } = spawnLogged('npm', ['start', '--silent'], { env: stack.env, logFile, detached: true });
  stack.teardown.add(async () => {
    try {
      process.kill(-supervisor.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await exited(supervisor);
    await sleep(1000);
  });
  stack.teardown.onSignals();
  try {
    await waitFor('the stack', () => answers200(`http://127.0.0.1:${port}/health/ready`), 120_000);
    console.log(
      `ready ${((performance.now() - started) / 1000).toFixed(1)} s after npm start (a warm database: cloned from the migrated template)`,
    );
    await sleep(Number(values.settle) * 1000);
    const before = new Map(group(supervisor.pid!).map((p) => [p.pid, cpuTicks(p.pid)]));
    await sleep(seconds * 1000);
    let rss = 0;
    let pss = 0;
    let ticks = 0;
    const rows: string[] = [];
    for (const p of group(supervisor.pid!)) {
      if (!before.has(p.pid)) continue;
      const r = kb(`/proc/${p.pid}/status`, 'VmRSS');
      const s = kb(`/proc/${p.pid}/smaps_rollup`, 'Pss');
      const t = cpuTicks(p.pid) - before.get(p.pid)!;
      rss += r;
      pss += s;
      ticks += t;
      const cpu = (100 * t * TICK_MS) / (seconds * 1000);
      rows.push(
        `${(r / 1024).toFixed(0).padStart(6)} MB ${(s / 1024).toFixed(0).padStart(6)} MB ${cpu.toFixed(2).padStart(6)} %  ${p.command.slice(0, 70)}`,
      );
    }
    console.log(`   RSS    PSS    CPU  process (over ${seconds} s, after ${values.settle} s settling)`);
    for (const row of rows) console.log(row);
    const restarts = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => /restarting/.test(l));
    if (restarts.length)
      console.log(`figures void: ${restarts.length} restarts (${logFile}):\n${restarts.slice(0, 5).join('\n')}`);
    console.log(
      `total: ${rows.length} processes, RSS ${(rss / 1024).toFixed(0)} MB, PSS ${(pss / 1024).toFixed(0)} MB, CPU ${((100 * ticks * TICK_MS) / (seconds * 1000)).toFixed(2)} % of one core`,
    );
  } finally {
    await stack.tearDown();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
