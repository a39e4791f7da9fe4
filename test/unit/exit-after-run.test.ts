import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** Runs mocha as `npm test` does (.mocharc.json) on the fixture, with a grace of 300 ms. */
function runFixture(leaveATimer: boolean) {
  const started = Date.now();
  const r = spawnSync(process.execPath, ['node_modules/mocha/bin/mocha.js', 'test/fixtures/leaves-a-timer.ts'], {
    cwd: ROOT,
    env: { ...process.env, MOCHA_EXIT_GRACE_MS: '300', LEAVE_A_TIMER: leaveATimer ? '1' : '0' },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: r.status, stderr: r.stderr, ms: Date.now() - started };
}

/** test/helpers/exit-after-run.ts: a run that cannot end by itself ends, and fails. */
describe('a test run that stays alive after its last test', function () {
  this.timeout(30_000);

  it('exits 1 after the grace, naming what keeps it alive, although every test passed', () => {
    const r = runFixture(true);
    expect(r.status).to.equal(1);
    expect(r.stderr).to.match(/the test run ended 0.3 s ago and the process is still alive \(.*Timeout.*\)/);
  });

  it('leaves a run that ends by itself alone: exit 0, no message', () => {
    const r = runFixture(false);
    expect(r.status).to.equal(0);
    expect(r.stderr).to.not.include('still alive');
  });
});
