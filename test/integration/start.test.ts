import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createTestDatabase } from '../helpers/databases';
import { eventually, ROOT } from '../helpers/processes';
import { freePort } from '../helpers/ports';
import { parseProcfile } from '../../scripts/start';
import { ADMIN_TOKEN } from '../helpers/env';

describe('npm start', function () {
  this.timeout(120_000);

  it('migrates, runs every Procfile line with prefixed output, serves /health/ready, and stops cleanly on Ctrl-C', async () => {
    const db = await createTestDatabase();
    const [port, sandboxPort] = [await freePort(), await freePort()];
    const lines = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: db.url,
        REDIS_URL: 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: `{start${port}}`,
        PORT: String(port),
        BASE_URL: `http://127.0.0.1:${port}`,
        SANDBOX_PROVIDER_PORT: String(sandboxPort),
        ADMIN_API_TOKEN: ADMIN_TOKEN,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const ready = await eventually(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
        return res.status === 200 ? res.json() : undefined;
      }, 60_000, 250);
      expect(ready).to.deep.equal({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
      for (const line of lines) {
        await eventually(async () => new RegExp(`^${line.name}\\s*\\| .*(started|listening)`, 'm').test(output), 30_000, 100).catch(() => {
          throw new Error(`${line.name} did not report it started; output:\n${output.slice(-3000)}`);
        });
      }
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).to.equal(0);
    for (const line of lines) expect(output).to.match(new RegExp(`start \\| ${line.name} exited`));
    expect(output).not.to.match(/exited \(1\)|SIGKILL/);
    await db.drop();
  });
});
