import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureLocalServices, PROJECT_ROOT } from './local-services';
import { loadConfig } from '../shared/config';
import { checkDeployment } from '../shared/deployment';
import { migrationsUpToDate } from '../shared/db/migrate';
import { lowerPriority, POOL_NICENESS } from '../workers/priority';
import { nextBackoff } from '../shared/restart';
import { HEARTBEAT, heartbeatTimeoutMs, STARTING_GRACE_MS } from '../shared/heartbeat';

/**
 * `npm start`: makes sure Postgres and Redis answer (starting private ones if needed), applies
 * migrations, then supervises every Procfile line with prefixed output. A process that dies, or
 * that stops answering (no heartbeat for HEARTBEAT_TIMEOUT_MS, 30 s: shared/heartbeat.ts; it is
 * then killed, logged), is started again after a backoff (1 s, doubling to 30 s while it keeps dying; back to 1 s once it
 * has run 10 s), each restart logged; only Ctrl-C (SIGINT) or SIGTERM stops everything,
 * gracefully. `--scale pool=n` (repeatable) runs n copies of a line, as an operator would in
 * production; `--scale web=n` sets WEB_CONCURRENCY (n web processes on the one port, node:cluster).
 */

const ROOT = PROJECT_ROOT;
const COLORS = [36, 33, 32, 35, 34, 91, 92, 93, 94, 95, 96];

export interface ProcLine {
  name: string;
  command: string;
}

export function parseProcfile(text: string): ProcLine[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([A-Za-z0-9_-]+):\s*(.+)$/.exec(l);
      if (!m) throw new Error(`bad Procfile line: ${l}`);
      return { name: m[1], command: m[2] };
    });
}

function prefixer(label: string, color: number, out: NodeJS.WriteStream) {
  let buf = '';
  const tag = out.isTTY ? `\x1b[${color}m${label}\x1b[0m` : label;
  return (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      out.write(`${tag} | ${buf.slice(0, i)}\n`);
      buf = buf.slice(i + 1);
    }
  };
}

async function main() {
  const { values } = parseArgs({ options: { scale: { type: 'string', multiple: true, default: [] } } });
  const scale = new Map<string, number>();
  for (const s of values.scale) {
    const m = /^([A-Za-z0-9_-]+)=(\d+)$/.exec(s);
    if (!m) throw new Error(`--scale takes name=count, got ${s}`);
    scale.set(m[1], Number(m[2]));
  }
  const say = (line: string) => process.stdout.write(`start | ${line}\n`);
  const env = { ...process.env };
  // web processes share one port through node:cluster (api/server.ts), never as separate copies
  if (scale.has('web')) {
    env.WEB_CONCURRENCY = String(scale.get('web'));
    scale.delete('web');
  }
  await ensureLocalServices(env, say);

  // the Procfile runs the compiled build: built again first when a source is newer (in this process: no node to start)
  const { isStale, build } = require(path.join(ROOT, 'scripts/build.js')) as {
    isStale: () => boolean;
    build: () => void;
  };
  if (isStale()) build();
  // migrations stay TypeScript run by tsx (knex records each by its file name), started only when one is pending
  const config = loadConfig(env);
  if (await migrationsUpToDate(config.databaseUrl)) say('database is up to date');
  else {
    const migrate = spawn(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: ROOT,
      env,
      stdio: 'inherit',
    });
    const code = await new Promise<number | null>((r) => migrate.on('exit', r));
    if (code !== 0) process.exit(code ?? 1);
  }
  // a bad deployment is refused here once, with what to change, rather than by every process as it starts
  await checkDeployment(config);

  const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
  const width = Math.max(...lines.map((l) => l.name.length)) + 2;
  interface Supervised {
    label: string;
    child: ChildProcess | null;
    restart: NodeJS.Timeout | null;
    /** when the child last said it lives (shared/heartbeat.ts), or started; `beating` once it has said so */
    lastBeat: number;
    beating: boolean;
  }
  // a process that stops answering is killed and started again, like one that dies
  const silenceAllowed = (s: Supervised) => (s.beating ? heartbeatTimeoutMs(env) : STARTING_GRACE_MS);
  const supervised: Supervised[] = [];
  let stopping = false;

  const allStopped = () => supervised.every((s) => !s.child && !s.restart);
  const stopAll = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${signal})`);
    for (const s of supervised) {
      if (s.restart) clearTimeout(s.restart);
      s.restart = null;
      s.child?.kill('SIGTERM');
    }
    if (allStopped()) process.exit(0);
    setTimeout(() => {
      for (const s of supervised) s.child?.kill('SIGKILL');
    }, 30_000).unref();
  };

  lines.forEach((line, i) => {
    const copies = scale.get(line.name) ?? 1;
    for (let n = 1; n <= copies; n++) {
      const label = copies > 1 ? `${line.name}.${n}` : line.name;
      const s: Supervised = { label, child: null, restart: null, lastBeat: 0, beating: false };
      let backoff = 0;
      const run = () => {
        s.restart = null;
        const startedAt = Date.now();
        const child = spawn('sh', ['-c', `exec ${line.command}`], {
          cwd: ROOT,
          env: { ...env, PROCESS_NAME: line.name },
          // the IPC channel carries the child's heartbeats (sh execs node, which inherits it)
          stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        });
        s.child = child;
        // the web is served first (workers/priority.ts): everything else starts, and runs, at the pools' niceness,
        // set before node starts its threads (they inherit it), so a starting stack answers /health/ready sooner
        if (line.name !== 'web' && child.pid) lowerPriority(POOL_NICENESS, child.pid);
        s.lastBeat = startedAt;
        s.beating = false;
        child.on('message', (m: { type?: unknown }) => {
          if (m?.type !== HEARTBEAT) return;
          s.lastBeat = Date.now();
          s.beating = true;
        });
        say(`${label} started (pid ${child.pid})`);
        child.stdout!.on('data', prefixer(label.padEnd(width), COLORS[i % COLORS.length], process.stdout));
        child.stderr!.on('data', prefixer(label.padEnd(width), COLORS[i % COLORS.length], process.stderr));
        child.on('exit', (code, signal) => {
          s.child = null;
          const how = signal ?? code;
          if (stopping) {
            say(`${label} exited (${how})`);
            if (allStopped()) process.exit(0);
            return;
          }
          backoff = nextBackoff(backoff, Date.now() - startedAt);
          say(`${label} exited (${how}); restarting in ${backoff / 1000} s`);
          s.restart = setTimeout(run, backoff);
        });
      };
      supervised.push(s);
      run();
    }
  });
  setInterval(
    () => {
      if (stopping) return;
      for (const s of supervised) {
        const silentMs = Date.now() - s.lastBeat;
        if (!s.child || silentMs <= silenceAllowed(s)) continue;
        say(`${s.label} sent no heartbeat for ${Math.round(silentMs / 1000)} s (pid ${s.child.pid}); killing it`);
        s.lastBeat = Date.now(); // one kill per silence: its exit restarts it
        s.child.kill('SIGKILL');
      }
    },
    heartbeatTimeoutMs(env) / 6,
  ).unref(); // twice per beat: a silence is seen within a sixth of the timeout
  process.on('SIGINT', () => stopAll('SIGINT'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`start failed: ${err.message}\n`);
    process.exit(1);
  });
}
