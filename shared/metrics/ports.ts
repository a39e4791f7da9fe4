/**
 * Where each worker pool serves its Prometheus metrics. Pools are separate processes with
 * registries of their own (prom-client aggregates only node:cluster workers), so each listens on
 * a port of its own; the web keeps its /metrics on PORT or ADMIN_PORT (api/metrics.ts).
 *
 * - `METRICS_PORT_BASE` (unset or 0: no pool serves metrics): pool P listens on
 *   METRICS_PORT_BASE + METRICS_PORT_OFFSETS[P]. One environment serves every line of `npm start`
 *   and of a Procfile runner, and the ports stay fixed, so a static scrape configuration finds
 *   them (ops/prometheus/prometheus.yml: base 9400).
 * - `<POOL>_METRICS_PORT` (PROVIDER_PUSH_METRICS_PORT, …) sets one pool's port outright (0: off).
 * - Copies of one pool on one machine (`npm start -- --scale provider-push=3`) take the next free
 *   ports of the pool's block of COPIES_PER_BLOCK: 9420, 9421, 9422.
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
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0 to 65535; 0 turns metrics off)`);
  return n;
}

/** The first port of a pool's block, or null when its metrics are off. */
export function metricsPortFor(pool: string, env: Record<string, string | undefined> = process.env): number | null {
  const own = portSetting(env, `${pool.toUpperCase().replace(/-/g, '_')}_METRICS_PORT`);
  if (own !== undefined) return own === 0 ? null : own;
  const base = portSetting(env, 'METRICS_PORT_BASE');
  if (!base) return null;
  const offset = METRICS_PORT_OFFSETS[pool];
  if (offset === undefined) throw new Error(`pool ${pool} has no metrics port: add it to METRICS_PORT_OFFSETS (shared/metrics/ports.ts)`);
  return base + offset;
}
