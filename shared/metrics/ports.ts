import { abovePortBase } from '../env';

/**
 * Where each worker pool serves its Prometheus metrics: pools are separate processes with
 * registries of their own (prom-client aggregates only node:cluster workers), so each has a port.
 * - `METRICS_PORT_BASE` (unset or 0: off): pool P listens on METRICS_PORT_BASE +
 *   METRICS_PORT_OFFSETS[P], fixed ports a static scrape configuration finds (ops/prometheus).
 *   Written `+N`, METRICS_PORT_BASE is N above PORT_BASE (shared/config.ts).
 * - `<POOL>_METRICS_PORT` (PROVIDER_PUSH_METRICS_PORT, …) sets one pool's port outright (0: off).
 * - Copies of one pool on one machine take the next free ports of its block: 9420, 9421, 9422.
 */
export const METRICS_PORT_OFFSETS: Record<string, number> = {
  'outbox-relay': 10,
  'provider-push': 20,
  'callback-reconciler': 30,
  'webhook-sender': 40,
  refund: 50,
  payout: 60,
  settlement: 70,
  'card-charge': 80,
};

/** Ports of one pool's block: its first copy's port and the COPIES_PER_BLOCK - 1 after it. */
export const COPIES_PER_BLOCK = 10;

function portSetting(env: Record<string, string | undefined>, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${name} must be a port number (0 to 65535; 0 turns metrics off)`);
  return n;
}

/** The first port of a pool's block, or null when its metrics are off. */
export function metricsPortFor(pool: string, env: Record<string, string | undefined> = process.env): number | null {
  const own = portSetting(env, `${pool.toUpperCase().replace(/-/g, '_')}_METRICS_PORT`);
  if (own !== undefined) return own === 0 ? null : own;
  // `+N`: N above PORT_BASE (shared/config.ts), which moves every port of an instance
  const base = abovePortBase(env, 'METRICS_PORT_BASE') ?? portSetting(env, 'METRICS_PORT_BASE');
  if (!base) return null;
  const offset = METRICS_PORT_OFFSETS[pool];
  if (offset === undefined)
    throw new Error(`pool ${pool} has no metrics port: add it to METRICS_PORT_OFFSETS (shared/metrics/ports.ts)`);
  return base + offset;
}
