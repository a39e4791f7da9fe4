import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../../scripts/lib/databases';
import { eventually, ROOT } from '../../scripts/lib/processes';
import { freePort } from '../../scripts/lib/ports';
import { parseProcfile } from '../../scripts/start';
import { nextBackoff } from '../../shared/restart';
import { HEARTBEAT } from '../../shared/heartbeat';
import { POOL_NICENESS } from '../../workers/priority';
import { ADMIN_TOKEN } from '../helpers/env';

/**
 * `npm start` as an operator runs it: a supervisor of every Procfile line that starts a process
 * again when it dies, with two web processes on one port (WEB_CONCURRENCY) and the operator API
 * on its own port (ADMIN_PORT).
 */
describe('npm start', function () {
  this.timeout(180_000);
  const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let child: ChildProcess;
  let exited: Promise<number | null>;
  let output = '';
  let port: number;
  let adminPort: number;

  /** pids the supervisor reported for a Procfile line, in order */
  const pidsOf = (name: string) =>
    [...output.matchAll(new RegExp(`^start \\| ${name} started \\(pid (\\d+)\\)`, 'gm'))].map((m) => Number(m[1]));
  const get = (p: number, route: string, auth = true) =>
    fetch(`http://127.0.0.1:${p}${route}`, { headers: auth ? { Authorization: `Bearer ${ADMIN_TOKEN}` } : {} });

  before(async () => {
    db = await createTestDatabase();
    [port, adminPort] = [await freePort(), await freePort()];
    const [sandboxPort, vaultPort, acquirerPort] = [await freePort(), await freePort(), await freePort()];
    child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'test',
        DATABASE_URL: db.url,
        REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: `{start${port}}`,
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        WEB_CONCURRENCY: '2',
        BASE_URL: `http://127.0.0.1:${port}`,
        SANDBOX_PROVIDER_PORT: String(sandboxPort),
        // the card sandboxes' default ports (4020, 4030) may be taken by another run on this machine
        CARD_VAULT_PORT: String(vaultPort),
        CARD_PROVIDER_PORT: String(acquirerPort),
        ADMIN_API_TOKEN: ADMIN_TOKEN,
        LOG_LEVEL: 'info',
        // a process silent for 6 s is taken as stuck (30 s in production)
        HEARTBEAT_TIMEOUT_MS: '6000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const ready = await eventually(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
        return res.status === 200 ? res.json() : undefined;
      },
      90_000,
      250,
    );
    expect(ready).to.deep.equal({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
    for (const line of lines) {
      await eventually(
        async () => new RegExp(`^${line.name}\\s*\\| .*(started|listening)`, 'm').test(output),
        60_000,
        100,
      ).catch(() => {
        throw new Error(`${line.name} did not report it started; output:\n${output.slice(-3000)}`);
      });
    }
  });
  after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await db.drop();
  });

  it('runs every Procfile line with prefixed output, each under the supervisor', () => {
    for (const line of lines) expect(pidsOf(line.name), line.name).to.have.length(1);
  });

  it("serves the web first: every other line runs at the pools' niceness, set as it is spawned", () => {
    for (const line of lines) {
      const [pid] = pidsOf(line.name);
      expect(os.getPriority(pid), line.name).to.equal(
        line.name === 'web' ? os.getPriority(process.pid) : Math.max(POOL_NICENESS, os.getPriority(process.pid)),
      );
    }
  });

  it('starts a process that dies again after 1 s, and logs it', async () => {
    const [pid] = pidsOf('outbox-relay');
    process.kill(pid, 'SIGKILL');
    await eventually(async () => pidsOf('outbox-relay').length === 2, 30_000, 100);
    expect(output).to.match(/^start \| outbox-relay exited \(SIGKILL\); restarting in 1 s$/m);
    const again = pidsOf('outbox-relay')[1];
    expect(again).not.to.equal(pid);
    // the new one works: it reports its loops started
    await eventually(
      async () => (output.match(/^outbox-relay\s*\| .*"loop":"relay".*periodic task started/gm) ?? []).length === 2,
      30_000,
      100,
    );
  });

  it('kills and starts again a process that stops answering (SIGSTOP: no heartbeat), and logs it', async () => {
    const [pid] = pidsOf('settlement');
    process.kill(pid, 'SIGSTOP');
    await eventually(async () => pidsOf('settlement').length === 2, 30_000, 100);
    expect(output).to.match(
      new RegExp(`^start \\| settlement sent no heartbeat for [0-9]+ s \\(pid ${pid}\\); killing it$`, 'm'),
    );
    expect(output).to.match(/^start \| settlement exited \(SIGKILL\); restarting in 1 s$/m);
    expect(() => process.kill(pid, 0), 'the stopped process is gone').to.throw();
    // processes that keep answering are left alone
    expect(pidsOf('outbox-relay').length).to.be.at.most(2);
    expect(pidsOf('provider-push')).to.have.length(1);
  });

  it('waits 1 s after a first death, doubling to 30 s while a process keeps dying', () => {
    expect(nextBackoff(0, 10)).to.equal(1000);
    const waits = [1000];
    for (let i = 0; i < 6; i++) waits.push(nextBackoff(waits[waits.length - 1], 10));
    expect(waits).to.deep.equal([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    // a process that had run 10 s starts again after 1 s
    expect(nextBackoff(30_000, 10_000)).to.equal(1000);
    expect(nextBackoff(4000, 9_000)).to.equal(8000);
  });

  it('WEB_CONCURRENCY=2: two web processes serve the one port; one that dies is started again', async () => {
    const listening = () =>
      [...output.matchAll(/^web\s*\| (\{.*"msg":"web listening".*\})$/gm)].map((m) => JSON.parse(m[1]).pid as number);
    await eventually(async () => listening().length === 2, 30_000, 100);
    const pids = listening();
    expect(new Set(pids).size).to.equal(2);
    process.kill(pids[0], 'SIGKILL');
    // the port keeps answering through the other process meanwhile (a kept-alive connection to the dead one is reset)
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health/live`)).status === 200, 5000, 50);
    await eventually(async () => listening().length === 3, 30_000, 100);
    expect(output).to.match(/"msg":"web process exited; restarting it"/);
    expect(pidsOf('web'), 'the primary itself did not die').to.have.length(1);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${port}/health/live`).then((r) => r.status)),
    );
    expect(answers.every((s) => s === 200)).to.equal(true);
  });

  it('ADMIN_PORT: the operator API, Bull Board and /metrics answer there, and 404 on PORT', async () => {
    expect((await get(adminPort, '/admin/maintenance')).status).to.equal(200);
    expect((await get(adminPort, '/metrics')).status).to.equal(200);
    expect((await get(adminPort, '/admin/queues')).status).to.equal(200);
    for (const route of ['/admin/maintenance', '/metrics', '/admin/queues'])
      expect((await get(port, route)).status, route).to.equal(404);
    // the merchant API is on PORT only
    expect((await get(port, '/v1/balance', false)).status).to.equal(401);
    expect((await get(adminPort, '/v1/balance', false)).status).to.equal(404);
  });

  it('stops everything on SIGINT, and only then, with exit code 0', async () => {
    child.kill('SIGINT');
    expect(await exited).to.equal(0);
    for (const line of lines) expect(output).to.match(new RegExp(`start \\| ${line.name} exited \\(\\w+\\)$`, 'm'));
    expect(output).not.to.match(/exited \(1\)|SIGKILL\)$/m);
  });
});

describe('a supervised process', function () {
  this.timeout(30_000);

  it('stops, as on SIGTERM, once its supervisor is gone (its IPC channel closed)', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'shared/providers/sandbox/server.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'test',
        SANDBOX_PROVIDER_PORT: String(port),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await new Promise<void>((resolve) =>
        child.on('message', (m: { type?: string }) => m?.type === HEARTBEAT && resolve()),
      );
      await eventually(async () => /listening/.test(output), 20_000, 50);
      const answers = () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => true,
          () => false,
        );
      expect(await answers(), 'it answers while supervised').to.equal(true);
      child.disconnect();
      // its SIGTERM handler's exit (a process killed by the signal would have none)
      expect(await exited).to.equal(0);
      expect(await answers(), 'its port is let go').to.equal(false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
