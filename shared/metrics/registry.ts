import { Registry } from 'prom-client';

/**
 * The registry of what a worker pool process records (its jobs, the kernel's provider calls),
 * served on the pool's own port (server.ts). The web serves its own registry and this one
 * together (api/metrics.ts).
 */
export const processRegistry = new Registry();
