/**
 * npm run sim:pawapay: the pawaPay Merchant API v2 simulator on its own (shared/providers/pawapay,
 * README.md there: endpoints, test numbers, choices). Point the pawaPay connector's base URL at it.
 *
 *   PAWAPAY_SIM_PORT          port (default 4110)
 *   PAWAPAY_SIM_HOST          address to listen on (default 127.0.0.1)
 *   PAWAPAY_SIM_CALLBACK_URL  where signed callbacks are POSTed (default http://127.0.0.1:3000/callbacks/pawapay;
 *                             'none': no callbacks)
 *   PAWAPAY_SIM_TOKEN         the API token it accepts (default sim-pawapay-token)
 *   PAWAPAY_SIM_CALLBACK_DELAY_MS, PAWAPAY_SIM_SLOW_INITIATION_MS  (defaults 2000, 15000)
 *   PAWAPAY_SIM_SIGNED_CALLBACKS  'false' sends callbacks unsigned (default signed)
 */
import { startPawapaySimulator } from './simulators/pawapay/simulator';

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

async function main() {
  const callback = process.env.PAWAPAY_SIM_CALLBACK_URL ?? 'http://127.0.0.1:3000/callbacks/pawapay';
  const sim = await startPawapaySimulator({
    port: int('PAWAPAY_SIM_PORT', 4110, 0, 65535),
    host: process.env.PAWAPAY_SIM_HOST || '127.0.0.1',
    token: process.env.PAWAPAY_SIM_TOKEN || 'sim-pawapay-token',
    callbackUrl: callback === 'none' ? null : callback,
    callbackDelayMs: int('PAWAPAY_SIM_CALLBACK_DELAY_MS', 2000, 0, 600_000),
    slowInitiationMs: int('PAWAPAY_SIM_SLOW_INITIATION_MS', 15_000, 0, 600_000),
    signCallbacks: process.env.PAWAPAY_SIM_SIGNED_CALLBACKS !== 'false',
    log: (line) => console.log(line),
  });
  console.log(
    `pawaPay v2 simulator on ${sim.url} (callbacks to ${callback}, key ${sim.keyId()}); GET ${sim.url}/_sim/transactions lists what it did`,
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
