/**
 * bench:soak's figures of one series (a process's RSS, its heap, Redis' memory, a table's size):
 * first, last and maximum, the least-squares slope per hour, and the verdict "grows without
 * bound". Pure functions of the samples, so that the rule is tested on its own
 * (test/unit/bench-soak-series.test.ts). The rule is documented in docs/benchmarks.md#benchsoak.
 */

/** One reading: minutes since the soak began, and the value (NaN: none could be read). */
export interface Point {
  minute: number;
  value: number;
}

/** The rule's bounds (docs/benchmarks.md#benchsoak). */
export const GROWTH = {
  /** the end (median of the last 3 readings) above this many times the settled value… */
  factor: 1.5,
  /** …and the slope over the run's second half still above this share of the settled value per hour */
  slopeShare: 0.1,
};

export interface Summary {
  first: number;
  last: number;
  max: number;
  /** least-squares slope over every reading, per hour */
  slopePerHour: number;
  /** least-squares slope over the readings of the run's second half, per hour */
  slopeSecondHalfPerHour: number;
  /** median of the three readings nearest the settle minute */
  settled: number;
  /** median of the last three readings */
  end: number;
  /** the rule: end > factor × settled, and the second half's slope > slopeShare × settled per hour */
  grows: boolean;
}

/** Least-squares slope of value over minutes, per hour; NaN under two distinct minutes. */
export function slopePerHour(points: Point[]): number {
  const p = points.filter((x) => Number.isFinite(x.value));
  if (p.length < 2) return NaN;
  const mx = p.reduce((s, x) => s + x.minute, 0) / p.length;
  const my = p.reduce((s, x) => s + x.value, 0) / p.length;
  let sxy = 0;
  let sxx = 0;
  for (const x of p) {
    sxy += (x.minute - mx) * (x.value - my);
    sxx += (x.minute - mx) ** 2;
  }
  return sxx === 0 ? NaN : (sxy / sxx) * 60;
}

const median = (values: number[]) => {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

/**
 * The figures of a series sampled over `minutes`, whose stack is taken as settled at
 * `settleMinute` (JIT, pools, caches, the queues' retained jobs filled up).
 */
export function summarize(points: Point[], minutes: number, settleMinute: number): Summary {
  const p = points.filter((x) => Number.isFinite(x.value));
  if (!p.length)
    return {
      first: NaN,
      last: NaN,
      max: NaN,
      slopePerHour: NaN,
      slopeSecondHalfPerHour: NaN,
      settled: NaN,
      end: NaN,
      grows: false,
    };
  // the three readings nearest the settle minute (in time order, so that ties take the earlier)
  const nearest = [...p]
    .sort((a, b) => Math.abs(a.minute - settleMinute) - Math.abs(b.minute - settleMinute) || a.minute - b.minute)
    .slice(0, 3);
  const settled = median(nearest.map((x) => x.value));
  const end = median(p.slice(-3).map((x) => x.value));
  const slopeSecondHalfPerHour = slopePerHour(p.filter((x) => x.minute >= minutes / 2));
  const grows =
    settled > 0 &&
    end > GROWTH.factor * settled &&
    slopeSecondHalfPerHour > GROWTH.slopeShare * settled &&
    // the settle minute lies before the second half: otherwise the run is too short to tell
    settleMinute < minutes / 2;
  return {
    first: p[0].value,
    last: p[p.length - 1].value,
    max: Math.max(...p.map((x) => x.value)),
    slopePerHour: slopePerHour(p),
    slopeSecondHalfPerHour,
    settled,
    end,
    grows,
  };
}
