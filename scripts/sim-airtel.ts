import { startAirtelSimulator, SIMULATOR_NUMBERS } from './simulators/airtel/simulator';

/**
 * `npm run sim:airtel`: the Airtel Money Open API simulator on its own
 * (scripts/simulators/airtel/simulator.ts, README there). Settings, all optional:
 *   AIRTEL_SIM_PORT            port (default 4120)
 *   AIRTEL_SIM_HOST            address (default 127.0.0.1)
 *   AIRTEL_SIM_CALLBACK_URL    where collection callbacks go (default: none)
 *   AIRTEL_SIM_CLIENT_ID       OAuth2 client id (default sim-client-id)
 *   AIRTEL_SIM_CLIENT_SECRET   OAuth2 client secret (default sim-client-secret)
 *   AIRTEL_SIM_CALLBACK_HASH_SECRET  callback authentication key: callbacks carry `hash` (default: off)
 *   AIRTEL_SIM_TOKEN_LIFETIME_S      token lifetime (default 180)
 *   AIRTEL_SIM_SLOW_MS               the slow number's answer delay (default 15000)
 *   AIRTEL_SIM_PIN                   the disbursement PIN expected (default 1234)
 *   AIRTEL_SIM_PIN_PADDING           oaep (v2 key, default) or pkcs1 (v1 key)
 * It prints its URL and the PIN public key to configure the connector with.
 */
function int(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

async function main(): Promise<void> {
  const padding = process.env.AIRTEL_SIM_PIN_PADDING ?? 'oaep';
  if (padding !== 'oaep' && padding !== 'pkcs1') throw new Error('AIRTEL_SIM_PIN_PADDING must be oaep or pkcs1');
  const sim = await startAirtelSimulator({
    port: int('AIRTEL_SIM_PORT', 4120),
    host: process.env.AIRTEL_SIM_HOST ?? '127.0.0.1',
    callbackUrl: process.env.AIRTEL_SIM_CALLBACK_URL || null,
    clientId: process.env.AIRTEL_SIM_CLIENT_ID || undefined,
    clientSecret: process.env.AIRTEL_SIM_CLIENT_SECRET || undefined,
    callbackHashSecret: process.env.AIRTEL_SIM_CALLBACK_HASH_SECRET || undefined,
    tokenLifetimeS: int('AIRTEL_SIM_TOKEN_LIFETIME_S', 180),
    slowInitiationMs: int('AIRTEL_SIM_SLOW_MS', 15_000),
    pin: process.env.AIRTEL_SIM_PIN || undefined,
    pinPadding: padding,
    log: (line) => process.stdout.write(`sim:airtel | ${line}\n`),
  });
  process.stdout.write(`sim:airtel | listening on ${sim.url} (inspection: GET ${sim.url}/_sim/transactions)\n`);
  process.stdout.write(`sim:airtel | PIN public key:\n${sim.publicKeyPem}`);
  process.stdout.write('sim:airtel | test numbers (national; ours are 243 + these):\n');
  for (const [n, rule] of Object.entries(SIMULATOR_NUMBERS)) process.stdout.write(`  ${n}  ${rule.what}\n`);
  const stop = () => {
    void sim.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: Error) => {
  process.stderr.write(`sim:airtel | ${err.message}\n`);
  process.exit(1);
});
