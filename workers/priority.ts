import { readdirSync } from 'node:fs';
import os from 'node:os';

/**
 * Lowers this process's CPU priority to `nice` (WORKER_NICE), for each of its threads: Linux
 * keeps a niceness per thread, and V8's and libuv's threads exist before the pool starts. Only
 * lowers: a process already started nicer (an operator's `nice -n 10`) keeps its own. Returns the
 * main thread's niceness afterwards.
 *
 * Why (a trade-off, off by default): the machine's cores are shared by the web and every pool.
 * Near the machine's limit the web, at the same priority as a dozen busy workers, falls behind
 * accepting connections (hundreds wait in its listen queue, up to seconds each, before it reads
 * them). With the pools nicer the web answers first (bench:e2e at 450/s: POST p99 0.4 s instead
 * of 0.9 s) and the pools' backlog, which the overload guard watches, grows instead; the web,
 * served at once, coalesces less and costs more per payment, so the stack sustains less (450/s
 * kept up at WORKER_NICE=0 and fell behind at 5, in runs one after the other).
 */
export function lowerPriority(nice: number): number {
  if (nice > 0) {
    let threads: number[];
    try {
      threads = readdirSync('/proc/self/task').map(Number);
    } catch {
      threads = [process.pid]; // no /proc: the main thread only
    }
    for (const tid of threads) {
      try {
        if (os.getPriority(tid) < nice) os.setPriority(tid, nice);
      } catch {
        // a thread that ended meanwhile
      }
    }
  }
  return os.getPriority(process.pid);
}
