import { readdirSync } from 'node:fs';
import os from 'node:os';

/**
 * The niceness every worker pool gives itself at start: the web is served first. On a machine
 * the web shares with the pools (`npm start`, one host of a small deployment), a busy pool would
 * otherwise take the cores while clients wait: requests sit in the web's listen queue, and past
 * saturation even a refusal waits its turn. Nicer pools let the web answer, and refuse, at once;
 * their backlog grows instead, which the overload guard watches (api/middleware/overload.ts).
 * Where each pool has its own machine or container, it changes nothing.
 */
export const POOL_NICENESS = 5;

/**
 * Lowers the CPU priority of process `pid` (this one by default) to `nice`, for each of its
 * threads: Linux keeps a niceness per thread, and V8's and libuv's threads exist before the pool
 * starts (the supervisor lowers a child's as it spawns it, and its threads inherit it). Only
 * lowers: a process already started nicer (an operator's `nice -n 10`) keeps its own. Returns
 * the main thread's niceness afterwards.
 */
export function lowerPriority(nice: number, pid = process.pid): number {
  let threads: number[];
  try {
    threads = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    threads = [pid]; // no /proc: the main thread only
  }
  for (const tid of threads) {
    try {
      if (os.getPriority(tid) < nice) os.setPriority(tid, nice);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return os.getPriority(pid);
}
