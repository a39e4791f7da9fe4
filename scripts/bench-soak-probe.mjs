// bench:soak's heap probe (scripts/bench-soak.ts), preloaded into every process of the stack it
// runs (`node --import <this file> build/…`); nothing else loads it. Once a second it reads V8's
// heap in use and writes to SOAK_PROBE_DIR/<PROCESS_NAME>-<pid>.json the last reading and the
// least one of the last SOAK_PROBE_MS: the heap that survived garbage collection, which a leak
// raises and a collection's timing does not. Plain JavaScript: the processes run the compiled
// build, without tsx.
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';

const dir = process.env.SOAK_PROBE_DIR;
if (dir) {
  const file = path.join(dir, `${process.env.PROCESS_NAME || 'node'}-${process.pid}.json`);
  const seconds = Math.max(1, Math.round((Number(process.env.SOAK_PROBE_MS) || 60_000) / 1000));
  /** the readings of the window, one a second, oldest first */
  const readings = [];
  // unref'd: the probe never keeps a process alive, nor delays its exit. The first reading comes
  // a second in, once the process's own modules are loaded.
  setInterval(() => {
    const heapUsed = v8.getHeapStatistics().used_heap_size;
    readings.push(heapUsed);
    if (readings.length > seconds) readings.shift();
    const heapLeast = Math.min(...readings);
    writeFileSync(`${file}.tmp`, JSON.stringify({ pid: process.pid, at: Date.now(), heapUsed, heapLeast }));
    renameSync(`${file}.tmp`, file);
  }, 1000).unref();
}
