/**
 * The time as the service's decisions see it (windows, sweeps, grace periods). Production reads
 * the system clock; a test builds its context with a clock it can move, instead of sleeping.
 */
export interface Clock {
  /** milliseconds since the Unix epoch */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until moved (tests). */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
