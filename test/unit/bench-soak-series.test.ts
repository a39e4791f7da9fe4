import { expect } from 'chai';
import { slopePerHour, summarize, type Point } from '../../scripts/bench-soak-series';

/** bench:soak's verdict (docs/benchmarks.md#benchsoak): which series grow without bound. */

/** A reading a minute for `minutes` minutes, of `f(minute)`. */
const series = (minutes: number, f: (minute: number) => number): Point[] =>
  Array.from({ length: minutes + 1 }, (_, minute) => ({ minute, value: f(minute) }));

describe('bench:soak series', () => {
  it('gives the least-squares slope per hour', () => {
    expect(slopePerHour(series(60, (m) => 100 + m))).to.be.closeTo(60, 1e-9);
    expect(slopePerHour(series(60, () => 100))).to.equal(0);
    expect(slopePerHour([{ minute: 0, value: 1 }])).to.be.NaN;
    // unread values (NaN) are left out, not taken for zero
    expect(slopePerHour([...series(10, (m) => 2 * m), { minute: 11, value: NaN }])).to.be.closeTo(120, 1e-9);
  });

  it('finds a leak: growing on after the stack settled', () => {
    // 100 MB at minute 10, then 2 MB a minute: 200 MB at the end of the hour, still rising
    const leak = summarize(
      series(60, (m) => (m < 10 ? 60 + 4 * m : 100 + 2 * (m - 10))),
      60,
      10,
    );
    expect(leak.settled).to.equal(100);
    expect(leak.end).to.equal(198);
    expect(leak.slopeSecondHalfPerHour).to.be.closeTo(120, 1e-9);
    expect(leak.grows).to.equal(true);
  });

  it('leaves a stack that filled up before it settled, and stays flat after, alone', () => {
    // BullMQ's retained jobs: climbing for 8 minutes, then level with noise
    const filled = summarize(
      series(60, (m) => (m < 8 ? 10 * m : 80 + (m % 3) - 1)),
      60,
      10,
    );
    expect(filled.first).to.equal(0);
    expect(filled.max).to.equal(81);
    expect(filled.grows).to.equal(false);
  });

  it('takes neither a collection nor a late step for growth', () => {
    // one high reading at the end (a collection not yet run): the end is the median of the last three
    const spike = summarize(
      series(60, (m) => (m === 60 ? 300 : 100)),
      60,
      10,
    );
    expect(spike.last).to.equal(300);
    expect(spike.end).to.equal(100);
    expect(spike.grows).to.equal(false);
    // a step up in the first half, flat since: no slope left in the second half
    const step = summarize(
      series(60, (m) => (m < 20 ? 100 : 200)),
      60,
      10,
    );
    expect(step.end).to.equal(200);
    expect(step.slopeSecondHalfPerHour).to.equal(0);
    expect(step.grows).to.equal(false);
  });

  it('does not judge a run whose second half begins before the stack settled', () => {
    const short = summarize(
      series(10, (m) => 100 * (m + 1)),
      10,
      10,
    );
    expect(short.grows).to.equal(false);
  });

  it('gives NaN figures, and no verdict, for a series never read', () => {
    const none = summarize(
      series(5, () => NaN),
      5,
      1,
    );
    expect(none.first).to.be.NaN;
    expect(none.grows).to.equal(false);
  });
});
