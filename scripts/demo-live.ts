/**
 * npm run demo:live: a payment, a refund and a payout with LIVE keys, end to end, against the
 * connectors' simulators (shared/providers/<connector>/simulator.ts), which follow pawaPay's and
 * Airtel's public references. It starts the simulators, a throwaway database, the web and the
 * pools on free ports, routes the live operators to the simulators (LIVE_VODACOM=pawapay,
 * LIVE_ORANGE=pawapay, LIVE_AIRTEL=airtel), prints each status as it changes, and stops
 * everything. Exit 0 when every operation reached the status it should; 1 otherwise.
 *
 * Needs Postgres and Redis as `npm test` does (127.0.0.1:5432 and :6379, or DATABASE_URL's
 * server through TEST_DATABASE_SERVER_URL and REDIS_URL); touches no database but its own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createMerchantWithKey, follow as followStatus, merchantSdk, operatorApi } from './lib/demo';
import { freePort } from './lib/ports';
import { startProcess, type RunningProcess } from './lib/processes';
import { setUpStack } from './lib/stack';
import { startAirtelSimulator } from './simulators/airtel/simulator';
import { startPawapaySimulator } from './simulators/pawapay/simulator';

const ADMIN_TOKEN = `demo-live-admin-${randomBytes(8).toString('hex')}`;
const POOLS = [
  'workers/outbox-relay/index.ts',
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
];
const started = Date.now();
const say = (line: string) => console.log(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  ${line}`);

interface Operation {
  id: string;
  status: string;
  provider?: string;
  provider_ref?: string | null;
  failure_code?: string | null;
}

/** Prints each status of one operation until it is final; returns the final object. */
function follow(label: string, read: () => Promise<Operation>): Promise<Operation> {
  const line = (op: Operation) =>
    `${op.status}${op.provider_ref ? `, provider_ref ${op.provider_ref}` : ''}${op.failure_code ? ` (${op.failure_code})` : ''}`;
  return followStatus(read, {
    everyMs: 200,
    timeoutMs: 60_000,
    onRead: (op, last) => (!last || line(op) !== line(last) ? say(`${label} ${op.id}: ${line(op)}`) : undefined),
  });
}

async function main() {
  const [webPort, airtelPort, pawapayPort] = [await freePort(), await freePort(), await freePort()];
  const baseUrl = `http://127.0.0.1:${webPort}`;
  const airtel = await startAirtelSimulator({
    port: airtelPort,
    callbackUrl: `${baseUrl}/callbacks/airtel`,
    callbackHashSecret: 'demo-airtel-hash',
    pin: '2468',
  });
  const pawapay = await startPawapaySimulator({
    port: pawapayPort,
    callbackUrl: `${baseUrl}/callbacks/pawapay`,
    token: 'demo-pawapay-token',
  });
  const ports = { sandbox: await freePort(), cardVault: await freePort(), cardProvider: await freePort() };
  const stack = await setUpStack({
    name: 'demo-live-',
    env: (databaseUrl, prefix) => ({
      NODE_ENV: 'development',
      PORT: String(webPort),
      BASE_URL: baseUrl,
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: prefix,
      ADMIN_API_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      LIVE_VODACOM: 'pawapay',
      LIVE_ORANGE: 'pawapay',
      LIVE_AIRTEL: 'airtel',
      PAWAPAY_URL: pawapay.url,
      PAWAPAY_API_TOKEN: 'demo-pawapay-token',
      AIRTEL_URL: airtel.url,
      AIRTEL_CLIENT_ID: 'sim-client-id',
      AIRTEL_CLIENT_SECRET: 'sim-client-secret',
      AIRTEL_CALLBACK_HASH_SECRET: 'demo-airtel-hash',
      AIRTEL_DISBURSEMENT_PIN: '2468',
      AIRTEL_PIN_PUBLIC_KEY: airtel.publicKeyPem,
      // Airtel calls back for collections only: refunds and payouts are asked about once their window is over
      PROVIDER_WINDOW_MS: '2000',
      ASK_INTERVAL_MS: '500',
      SANDBOX_PROVIDER_PORT: String(ports.sandbox),
      CARD_VAULT_PORT: String(ports.cardVault),
      CARD_PROVIDER_PORT: String(ports.cardProvider),
    }),
  });
  stack.teardown.add(() => Promise.all([airtel.close(), pawapay.close()]));
  say(`simulators: pawaPay ${pawapay.url}, Airtel ${airtel.url}; database ${stack.database.name}`);
  const processes: RunningProcess[] = [];
  stack.teardown.add(() => Promise.all(processes.map((p) => p.stop())));
  let ok: boolean;
  try {
    for (const entry of ['api/server.ts', ...POOLS]) {
      const p = startProcess(entry, stack.env);
      processes.push(p);
      await p.waitForLine((l) => typeof l === 'object' && /started|listening/.test(l?.msg ?? ''));
    }
    say(`service on ${baseUrl}, live operators routed: vodacom and orange to pawaPay, airtel to Airtel`);

    const merchant = await createMerchantWithKey(
      operatorApi(baseUrl, ADMIN_TOKEN),
      {
        name: 'Demo live shop',
        fees: { USD: { percent_bps: 150, fixed: 0 }, CDF: { percent_bps: 150, fixed: 0 } },
      },
      { environment: 'live', scope: 'full' },
    );
    const cred = merchant.credential;
    const api = merchantSdk(baseUrl, cred);
    say(`merchant ${merchant.id}, live key ${cred.api_key.slice(0, 12)}…`);

    const results: [string, string, string][] = [];
    const pay = async (operator: 'vodacom' | 'airtel', phone: string, amount: number) => {
      const p = await api.payments.create({
        amount,
        currency: 'USD',
        method: 'mobile_money',
        operator,
        phone,
        reference: `demo-live-${randomUUID()}`,
        description: 'Demo live payment',
      });
      say(`POST /v1/payments (${operator}, ${amount} USD minor) → ${p.status}, provider ${p.provider}`);
      const done = await follow('payment', () => api.payments.retrieve(p.id) as Promise<Operation>);
      results.push([`payment via ${p.provider}`, done.status, 'succeeded']);
      return done;
    };
    const refund = async (paymentId: string, amount?: number) => {
      const r = await api.refunds.create(paymentId, amount === undefined ? {} : { amount });
      say(`POST /v1/payments/${paymentId}/refund${amount === undefined ? ' (full)' : ` (${amount})`} → ${r.status}`);
      const done = await follow(
        'refund',
        async () => (await api.refunds.list(paymentId)).data.find((x) => x.id === r.id) as Operation,
      );
      results.push([`refund ${amount === undefined ? 'full' : 'partial'}`, done.status, 'succeeded']);
    };

    // pawaPay (VODACOM_MPESA_COD): a payment, a partial refund
    const viaPawapay = await pay('vodacom', '243810000001', 5_000);
    await refund(viaPawapay.id, 1_500);
    // Airtel direct: a payment, its full refund (Airtel refunds only whole transactions)
    const viaAirtel = await pay('airtel', '243970000001', 4_000);
    await refund(viaAirtel.id);
    // a payout through Airtel, the PIN encrypted with the simulator's key
    const po = await api.payouts.create({
      amount: 1_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: '243970000001',
      reference: `demo-po-${randomUUID()}`,
    });
    say(`POST /v1/payouts (airtel, 1000) → ${po.status}`);
    const paid = await follow('payout', () => api.payouts.retrieve(po.id));
    results.push(['payout via airtel', paid.status, 'succeeded']);

    console.log('\n| operation | status | expected |\n|---|---|---|');
    for (const [what, status, expected] of results) console.log(`| ${what} | ${status} | ${expected} |`);
    const simRows = [
      ...pawapay.transactions().map((t) => ['pawaPay', t]),
      ...airtel.transactions().map((t) => ['Airtel', t]),
    ] as [string, { id: string; status: string; initiations: number }][];
    console.log('\n| simulator | transaction | final state | initiations |\n|---|---|---|---|');
    for (const [sim, t] of simRows) console.log(`| ${sim} | ${t.id} | ${t.status} | ${t.initiations} |`);
    ok = results.every(([, status, expected]) => status === expected);
  } finally {
    await stack.tearDown();
  }
  console.log(
    ok
      ? '\ndemo:live: every operation reached its expected status'
      : '\ndemo:live: an operation did not reach its expected status',
  );
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  console.error(`demo:live failed: ${(err as Error).message}`);
  process.exit(1);
});
