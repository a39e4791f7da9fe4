import { collectDefaultMetrics, Registry } from 'prom-client';

/** What a worker pool records (jobs, the kernel's provider calls), served on the pool's own port (server.ts). */
export const processRegistry = new Registry();

/**
 * Node's process metrics (CPU, memory, event-loop delay, GC) into `register`. The event-loop
 * delay is sampled every second rather than prom-client's 10 ms: an idle process then wakes once
 * a second for it instead of 100 times, and a stall still shows in the histogram whenever a
 * sample falls in it (the web's own overload guard samples finely, and only while it takes
 * requests: api/middleware/overload.ts).
 */
export function collectProcessMetrics(register: Registry): void {
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 1000 });
}
