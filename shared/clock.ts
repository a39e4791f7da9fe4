/**
 * The time as the service's decisions see it (windows, sweeps, grace periods). Production reads
 * the system clock; a test builds its context with a clock it can move, instead of sleeping.
 */
export interface Clock {
  /** milliseconds since the Unix epoch */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock a test moves instead of sleeping. It stands still until moved (sweeps and windows: the
 * test decides every instant), or with `running` it follows the system clock plus what the test
 * advanced (an in-process app whose other instants are the wall clock's, such as the end of a
 * revoked key's grace written by the service).
 */
export class ManualClock implements Clock {
  private offset: number;

  constructor(
    start = Date.now(),
    private readonly running = false,
  ) {
    this.offset = running ? start - Date.now() : start;
  }

  now(): number {
    return this.running ? Date.now() + this.offset : this.offset;
  }

  advance(ms: number): void {
    this.offset += ms;
  }
}
