import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clockOf, fileClock, systemClock } from '../../shared/clock';

describe('clock', () => {
  const file = path.join(tmpdir(), `svc-clock-unit-${process.pid}`);
  after(() => rmSync(file, { force: true }));

  it('a file clock is the system clock plus the offset in its file, read at each call (none without a file)', () => {
    rmSync(file, { force: true });
    const clock = fileClock(file);
    const within = (t: number, offset: number) => expect(t - Date.now() - offset).to.be.within(-50, 0);
    within(clock.now(), 0);
    writeFileSync(file, String(86_400_000));
    within(clock.now(), 86_400_000);
    writeFileSync(file, '-5000');
    within(clock.now(), -5000);
  });

  it('a process reads the system clock unless its configuration names a test clock file', () => {
    expect(clockOf({ testClockFile: null })).to.equal(systemClock);
    writeFileSync(file, '1000');
    expect(clockOf({ testClockFile: file }).now() - Date.now()).to.be.within(950, 1000);
  });
});
