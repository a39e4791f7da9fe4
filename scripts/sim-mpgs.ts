/**
 * npm run sim:mpgs: the Mastercard Gateway REST API v100 simulator on its own
 * (scripts/simulators/mpgs; test cards, faults and control endpoints in
 * shared/providers/mpgs/README.md). Point MPGS_GATEWAY_URL at it.
 *
 *   MPGS_SIM_PORT                 port (default 5210)
 *   MPGS_SIM_HOST                 address to listen on (default 127.0.0.1)
 *   MPGS_SIM_MERCHANT_ID          merchant id it accepts (default TESTSIMMERCHANT)
 *   MPGS_SIM_API_PASSWORD         API password it accepts (default sim-mpgs-password)
 *   MPGS_SIM_NOTIFICATION_SECRET  X-Notification-Secret it sends (default sim-mpgs-notification-secret)
 *   MPGS_SIM_NOTIFICATION_URL     where notifications go (default http://127.0.0.1:3000/callbacks/mpgs; 'none': none)
 *   MPGS_SIM_SLOW_MS              the slow answer's delay (default 5000)
 */
import { startMpgsSimulator } from './simulators/mpgs/server';

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

async function main() {
  const notify = process.env.MPGS_SIM_NOTIFICATION_URL ?? 'http://127.0.0.1:3000/callbacks/mpgs';
  const merchantId = process.env.MPGS_SIM_MERCHANT_ID || 'TESTSIMMERCHANT';
  const sim = await startMpgsSimulator({
    port: int('MPGS_SIM_PORT', 5210, 0, 65535),
    host: process.env.MPGS_SIM_HOST || '127.0.0.1',
    merchantId,
    apiPassword: process.env.MPGS_SIM_API_PASSWORD || 'sim-mpgs-password',
    notificationSecret: process.env.MPGS_SIM_NOTIFICATION_SECRET || 'sim-mpgs-notification-secret',
    notificationUrl: notify === 'none' ? null : notify,
    slowMs: int('MPGS_SIM_SLOW_MS', 5000, 0, 600_000),
    log: (line) => console.log(line),
  });
  console.log(
    `Mastercard Gateway v100 simulator on ${sim.url} (merchant ${merchantId}; session.js at ${sim.url}/form/version/100/merchant/${merchantId}/session.js; notifications to ${notify}); GET ${sim.url}/_sim/transactions lists what it did`,
  );
  const stop = () => {
    void sim.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  console.error((err as Error).message);
  process.exit(1);
});
