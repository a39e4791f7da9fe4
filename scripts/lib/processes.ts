import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface RunningProcess {
  child: ChildProcess;
  /** Every log line so far (parsed JSON where possible). */
  lines: any[];
  waitForLine(pred: (line: any) => boolean, timeoutMs?: number): Promise<any>;
  /** SIGTERM, then wait for exit and the last of its output; returns the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  kill(): Promise<void>;
}

/**
 * What a spawned process may take from the caller's shell: only what Node itself needs to run
 * (style guide rule 17). Every setting of the service comes from the test's own configuration,
 * so `SANDBOX_CALLBACK_SECRET=x npm test` (or any other variable in the shell) changes nothing.
 */
export const INHERITED_ENV = ['PATH', 'HOME', 'TMPDIR', 'NODE_OPTIONS', 'SYSTEMROOT'] as const;

/** The environment of a spawned process: the allow-listed basics, then exactly `config`. */
export function childEnv(config: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return { ...env, ...config };
}

/** Starts a real process of this service (a worker pool, the web, the sandbox provider). */
export function startProcess(entry: string, env: Record<string, string>): RunningProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: any[] = [];
  const waiters: { pred: (l: any) => boolean; resolve: (l: any) => void }[] = [];
  let buf = '';
  const onData = (chunk: Buffer) => {
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const text = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let line: any = text;
      try {
        line = JSON.parse(text);
      } catch {
        /* plain text */
      }
      lines.push(line);
      if (process.env.TEST_PROCESS_LOGS) process.stderr.write(`[${path.basename(path.dirname(entry))}] ${text}\n`);
      for (const w of [...waiters])
        if (w.pred(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  // 'close', not 'exit': it comes after the process's output has been read, so a line logged
  // before exiting is in `lines` once stop() returns, and waitForLine never gives up before it
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return {
    child,
    lines,
    waitForLine(pred, timeoutMs = 15_000) {
      const found = lines.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () =>
            reject(
              new Error(`timed out waiting for a log line of ${entry}; last lines: ${JSON.stringify(lines.slice(-5))}`),
            ),
          timeoutMs,
        );
        waiters.push({ pred, resolve: (l) => (clearTimeout(t), resolve(l)) });
        void exited.then(() => {
          clearTimeout(t);
          reject(new Error(`${entry} exited; last lines: ${JSON.stringify(lines.slice(-8))}`));
        });
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Polls `fn` until it returns a truthy value. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Whether a process of this machine is alive (signal 0 tests it without touching it). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
