import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { startProcess } from '../../scripts/lib/processes';

/**
 * Style guide rule 17: tests pin their settings. A process a test starts reads exactly the
 * configuration of the in-process app, whatever the caller's shell holds (a developer with
 * SANDBOX_CALLBACK_SECRET exported once saw 21 tests fail: workers and web disagreed).
 */
describe('test harness', () => {
  let env: TestEnv;
  const shell: Record<string, string> = {
    SANDBOX_CALLBACK_SECRET: 'secret-from-the-shell',
    WEBHOOK_TIMEOUT_MS: '1234',
    SANDBOX_CALLBACK_DELAY_MS: '1',
    PAWAPAY_URL: 'http://shell.example/pawapay',
    PAWAPAY_API_TOKEN: 'shell-key',
    LIVE_VODACOM: 'pawapay',
    SECRETS_KEY: `shell:${Buffer.alloc(32, 9).toString('base64')}`,
  };
  const saved: Record<string, string | undefined> = {};
  before(async () => {
    env = await startTestEnv();
    for (const [k, v] of Object.entries(shell)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(async () => {
    for (const k of Object.keys(shell)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await env.close();
  });

  it('gives a spawned process the in-process configuration, not the caller’s shell environment', async () => {
    const p = startProcess('test/fixtures/print-config.ts', env.processEnv);
    const line = await p.waitForLine((l) => l?.msg === 'config');
    await p.stop();
    const { secretsKeys, logLevel: _a, ...inProcess } = env.config;
    const { logLevel: _b, ...spawned } = line.config;
    expect(spawned).to.deep.equal(JSON.parse(JSON.stringify(inProcess)));
    expect(line.secretsKeyIds).to.deep.equal(secretsKeys.map((k) => k.id));
    expect(JSON.stringify(line)).not.to.match(/from-the-shell|shell-key|shell-secret|shell\.example/);
  });
});
