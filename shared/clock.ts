import { readFileSync } from 'node:fs';
import type { Config } from './config';

/**
 * The time as the service's decisions see it (windows, sweeps, grace periods). Production reads
 * the system clock; a test moves a clock instead of sleeping: a ManualClock given to a context it
 * builds, or the file clock of the processes it spawns (fileClock).
 */
export interface Clock {
  /** milliseconds since the Unix epoch */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Tests only (TEST_CLOCK_FILE): the system clock plus the offset in milliseconds written in
 * `file` (none while there is no file), read at each call, so a test moves the clock of the
 * processes it spawned by rewriting the file (test/helpers/env.ts, `clock`).
 */
export function fileClock(file: string): Clock {
  return { now: () => Date.now() + offsetIn(file) };
}

function offsetIn(file: string): number {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const offset = Number(text);
  if (!Number.isFinite(offset))
    throw new Error(`the test clock file ${file} holds no offset in milliseconds: "${text}"`);
  return offset;
}

/** The clock of a process with this configuration: the system clock, or a test's file clock. */
export function clockOf(config: Pick<Config, 'testClockFile'>): Clock {
  return config.testClockFile ? fileClock(config.testClockFile) : systemClock;
}

/**
 * A clock a test moves instead of sleeping: it stands still until moved, or with `running` it
 * follows the system clock plus what the test advanced (for an in-process app whose other
 * instants are the wall clock's).
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
