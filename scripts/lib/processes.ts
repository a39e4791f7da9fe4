import { fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
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

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it holds; past `timeoutMs`, throws `<what> did not come up within N s`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(everyMs);
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
}

/** Whether `url` answers 200 right now (no answer: false), e.g. a service's /health/ready. */
export const answers200 = async (url: string): Promise<boolean> => (await fetch(url).catch(() => null))?.status === 200;

/** The path of a machine binary in the usual folders (and `dirs`), else an error saying what to install. */
export function need(bin: string, pkg: string, dirs: string[] = []): string {
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin', ...dirs])
    if (existsSync(path.join(dir, bin))) return path.join(dir, bin);
  throw new Error(`${bin} is not installed: apt-get install -y ${pkg}`);
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Resolves once `child` has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  return running(child) ? new Promise((r) => child.once('exit', () => r())) : Promise.resolve();
}

/**
 * Stops processes: `signal` to each one still running, then SIGKILL to whatever is left after
 * `graceMs` (a process whose Redis is gone may never finish closing); resolves once all exited.
 */
export async function stopAll(children: ChildProcess[], signal: NodeJS.Signals = 'SIGTERM', graceMs = 30_000) {
  const all = Promise.all(children.map(exited));
  for (const c of children) if (running(c)) c.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), graceMs)));
  if ((await Promise.race([all, late])) === 'late') {
    for (const c of children) if (running(c)) c.kill('SIGKILL');
    await all;
  }
  clearTimeout(timer);
}

/**
 * Runs this script's `file` again in a child process in the role `role` (a flag of runBench, such
 * as `--serve`), with an IPC channel; resolves with the child's first message, its sign that it is
 * ready (its ports, its keys).
 */
export async function forkRole<T>(
  file: string,
  role: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ child: ChildProcess; ready: T }> {
  const child = fork(file, [role], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (code) => reject(new Error(`${path.basename(file)} ${role} exited (${code})`)));
  });
  return { child, ready };
}

/** Sends `message` to a child of forkRole and resolves with its answer (rejects on `{ error }`). */
export function ask<T>(child: ChildProcess, message: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (r: any) => (typeof r?.error === 'string' ? reject(new Error(r.error)) : resolve(r as T)));
    child.send(message as object);
  });
}

/**
 * Starts `command` (node runs as this Node) with its output appended to `logFile`, as an
 * operator's process manager keeps it: no pipe for the caller to read, which would take CPU from
 * what it measures. `tail()` is the end of that log, for an error message.
 */
export function spawnLogged(
  command: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; logFile: string; detached?: boolean; cwd?: string },
): { child: ChildProcess; tail: () => string } {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(command === 'node' ? process.execPath : command, args, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env,
    stdio: ['ignore', fd, fd],
    detached: opts.detached,
  });
  closeSync(fd);
  const tail = () => {
    const f = openSync(opts.logFile, 'r');
    try {
      const size = fstatSync(f).size;
      const end = Buffer.alloc(Math.min(size, 1500));
      readSync(f, end, 0, end.length, size - end.length);
      return end.toString('utf8');
    } finally {
      closeSync(f);
    }
  };
  return { child, tail };
}

/** Asks a child of forkRole to stop (stopOnRequest: its teardown runs) and resolves once it has exited. */
export async function stopRole(child: ChildProcess): Promise<void> {
  if (running(child) && child.connected) child.send({ cmd: 'stop' });
  await exited(child);
}
