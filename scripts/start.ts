import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureLocalServices } from './local-services';

/**
 * `npm start`: makes sure Postgres and Redis answer (starting private ones if needed), applies
 * migrations, then runs every Procfile line with prefixed output. Ctrl-C (or SIGTERM) stops every
 * process gracefully; if one process dies, the others are stopped and the exit code is non-zero.
 * `--scale pool=n` (repeatable) runs n copies of a line, as an operator would in production.
 */

const ROOT = path.resolve(__dirname, '..');
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
  for (const s of values.scale!) {
    const m = /^([A-Za-z0-9_-]+)=(\d+)$/.exec(s);
    if (!m) throw new Error(`--scale takes name=count, got ${s}`);
    scale.set(m[1], Number(m[2]));
  }
  const say = (line: string) => process.stdout.write(`start | ${line}\n`);
  const env = { ...process.env };
  await ensureLocalServices(env, say);

  const migrate = spawn(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], { cwd: ROOT, env, stdio: 'inherit' });
  const code = await new Promise<number | null>((r) => migrate.on('exit', r));
  if (code !== 0) process.exit(code ?? 1);

  const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
  const width = Math.max(...lines.map((l) => l.name.length)) + 2;
  const children: { label: string; child: ChildProcess }[] = [];
  let stopping = false;
  let exitCode = 0;

  const stopAll = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${signal})`);
    for (const { child } of children) if (child.exitCode === null) child.kill('SIGTERM');
    setTimeout(() => {
      for (const { child } of children) if (child.exitCode === null) child.kill('SIGKILL');
    }, 30_000).unref();
  };

  lines.forEach((line, i) => {
    const copies = scale.get(line.name) ?? 1;
    for (let n = 1; n <= copies; n++) {
      const label = (copies > 1 ? `${line.name}.${n}` : line.name).padEnd(width);
      const child = spawn('sh', ['-c', `exec ${line.command}`], {
        cwd: ROOT,
        env: { ...env, PROCESS_NAME: line.name },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', prefixer(label, COLORS[i % COLORS.length], process.stdout));
      child.stderr!.on('data', prefixer(label, COLORS[i % COLORS.length], process.stderr));
      child.on('exit', (code, signal) => {
        say(`${label.trim()} exited (${signal ?? code})`);
        if (!stopping) {
          exitCode = 1;
          stopAll('SIGTERM');
        }
        if (children.every((c) => c.child.exitCode !== null || c.child.signalCode !== null)) process.exit(exitCode);
      });
      children.push({ label, child });
    }
  });
  process.on('SIGINT', () => stopAll('SIGINT'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`start failed: ${err.message}\n`);
    process.exit(1);
  });
}
