// bench:soak's heap probe (scripts/bench-soak.ts), preloaded into every process of the stack it
// runs (`node --import <this file> build/…`); nothing else loads it. Once a second it reads V8's
// heap in use, and every SOAK_PROBE_MS it writes to SOAK_PROBE_DIR/<PROCESS_NAME>-<pid>.json the
// last reading and the least one of that window: the heap that survived garbage collection, which
// a leak raises and a collection's timing does not. Plain JavaScript: the processes run the
// compiled build, without tsx.
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';

const dir = process.env.SOAK_PROBE_DIR;
if (dir) {
  const file = path.join(dir, `${process.env.PROCESS_NAME || 'node'}-${process.pid}.json`);
  const windowMs = Number(process.env.SOAK_PROBE_MS) || 60_000;
  const used = () => v8.getHeapStatistics().used_heap_size;
  let least = used();
  let windowStart = Date.now();
  const write = (last) => {
    writeFileSync(
      `${file}.tmp`,
      JSON.stringify({ pid: process.pid, at: Date.now(), heapUsed: last, heapLeast: least }),
    );
    renameSync(`${file}.tmp`, file);
  };
  write(least);
  // unref'd: the probe never keeps a process alive, nor delays its exit
  setInterval(() => {
    const now = used();
    least = Math.min(least, now);
    if (Date.now() - windowStart < windowMs) return;
    write(now);
    least = now;
    windowStart = Date.now();
  }, 1000).unref();
}
