import { collectDefaultMetrics, Registry } from 'prom-client';

/** What a worker pool records (jobs, the kernel's provider calls), served on the pool's own port (server.ts). */
export const processRegistry = new Registry();

/**
 * Node's process metrics (CPU, memory, event-loop delay, GC) into `register`. The event-loop
 * delay is sampled every 100 ms rather than prom-client's 10: an idle process then wakes 10
 * times a second for it instead of 100 (the web's own overload guard samples more finely, and
 * only while it takes requests).
 */
export function collectProcessMetrics(register: Registry): void {
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 100 });
}
