/**
 * npm run demo:live: a payment, a refund and a payout with LIVE keys, end to end, against the
 * connectors' simulators (shared/providers/<connector>/simulator.ts, scripts/simulators/mpgs),
 * which follow pawaPay's, Airtel's and the Mastercard Gateway's public references. It starts the
 * simulators, a throwaway database, the web and the pools on free ports (or --base-port p … p+6),
 * routes the live operators and cards to the simulators (LIVE_VODACOM=pawapay, LIVE_ORANGE=pawapay,
 * LIVE_AIRTEL=airtel, LIVE_CARD=mpgs), prints each status as it changes, and stops everything.
 *
 * Its card rows go through the checkout as a browser would, without one (scripts/lib/cards.ts):
 * approved frictionless, a 3-D Secure challenge approved through the simulator's challenge
 * control, a decline, and the operator's partial refund of the approved one
 * (POST /admin/payments/{id}/refunds). Each card row checks the gateway (one PAY, or one REFUND),
 * the ledger (one credit of the payment's net, none for a decline, the refund's debit) and the
 * events (the final one, once); `npm run ledger:check`'s function runs at the end.
 * Exit 0 when every operation reached the status it should and every check held; 1 otherwise.
 *
 * Needs Postgres and Redis as `npm test` does (127.0.0.1:5432 and :6379, or DATABASE_URL's
 * server through TEST_DATABASE_SERVER_URL and REDIS_URL); touches no database but its own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import knex from 'knex';
import { checkLedger } from '../shared/ledger/check';
import { atGateway, CARDS, creditsOf, endChallenge, eventCounts, EXPIRY, payByCard } from './lib/cards';
import { createMerchantWithKey, follow as followStatus, merchantSdk, operatorApi } from './lib/demo';
import { freePort } from './lib/ports';
import { startProcess, type RunningProcess } from './lib/processes';
import { setUpStack } from './lib/stack';
import { startAirtelSimulator } from './simulators/airtel/simulator';
import { startPawapaySimulator } from './simulators/pawapay/simulator';
import { startMpgsSimulator } from './simulators/mpgs/server';

const { values: opts } = parseArgs({ options: { 'base-port': { type: 'string' } } });
const basePort = opts['base-port'] === undefined ? undefined : Number(opts['base-port']);
if (basePort !== undefined && !(Number.isInteger(basePort) && basePort > 0 && basePort < 65530))
  throw new Error('--base-port must be a port number with 6 more above it');
/** The demo's ports: --base-port p … p+6 when given, else free ones. */
let portIndex = 0;
const nextPort = () => (basePort === undefined ? freePort() : Promise.resolve(basePort + portIndex++));
const MPGS_MERCHANT = 'TESTDEMOLIVE01';
const MPGS_PASSWORD = `demo-live-mpgs-${randomBytes(8).toString('hex')}`;
const MPGS_NOTIFICATION_SECRET = `demo-live-notification-${randomBytes(8).toString('hex')}`;

const ADMIN_TOKEN = `demo-live-admin-${randomBytes(8).toString('hex')}`;
const POOLS = [
  'workers/outbox-relay/index.ts',
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
  'workers/card-charge/index.ts',
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
  const [webPort, airtelPort, pawapayPort, mpgsPort] = [
    await nextPort(),
    await nextPort(),
    await nextPort(),
    await nextPort(),
  ];
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
  const mpgs = await startMpgsSimulator({
    port: mpgsPort,
    merchantId: MPGS_MERCHANT,
    apiPassword: MPGS_PASSWORD,
    notificationSecret: MPGS_NOTIFICATION_SECRET,
    notificationUrl: `${baseUrl}/callbacks/mpgs`,
    notificationRetryMs: 300,
  });
  const ports = { sandbox: await nextPort(), cardVault: await nextPort(), cardProvider: await nextPort() };
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
      LIVE_CARD: 'mpgs',
      MPGS_GATEWAY_URL: mpgs.url,
      MPGS_MERCHANT_ID: MPGS_MERCHANT,
      MPGS_API_PASSWORD: MPGS_PASSWORD,
      MPGS_NOTIFICATION_SECRET,
      // the demo's client posts from addresses of its own, through one trusted proxy (the checkout's limit is per IP)
      TRUSTED_PROXIES: '1',
      // Airtel calls back for collections only: refunds and payouts are asked about once their window is over
      PROVIDER_WINDOW_MS: '2000',
      ASK_INTERVAL_MS: '500',
      SANDBOX_PROVIDER_PORT: String(ports.sandbox),
      CARD_VAULT_PORT: String(ports.cardVault),
      CARD_PROVIDER_PORT: String(ports.cardProvider),
    }),
  });
  stack.teardown.add(() => Promise.all([airtel.close(), pawapay.close(), mpgs.close()]));
  say(
    `simulators: pawaPay ${pawapay.url}, Airtel ${airtel.url}, Mastercard Gateway ${mpgs.url}; database ${stack.database.name}`,
  );
  const db = knex({ client: 'pg', connection: stack.database.url, pool: { min: 0, max: 2 } });
  stack.teardown.add(() => db.destroy());
  const processes: RunningProcess[] = [];
  stack.teardown.add(() => Promise.all(processes.map((p) => p.stop())));
  let ok: boolean;
  try {
    for (const entry of ['api/server.ts', ...POOLS]) {
      const p = startProcess(entry, stack.env);
      processes.push(p);
      await p.waitForLine((l) => typeof l === 'object' && /started|listening/.test(l?.msg ?? ''));
    }
    say(
      `service on ${baseUrl}, live operators routed: vodacom and orange to pawaPay, airtel to Airtel; cards to the Mastercard Gateway`,
    );

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

    /** each row: what, its final status, the status expected, what else was checked, whether that held */
    const results: [string, string, string, string, boolean][] = [];
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
      results.push([`payment via ${p.provider}`, done.status, 'succeeded', 'status', true]);
      return done;
    };
    const refund = async (paymentId: string, amount?: number) => {
      const r = await api.refunds.create(paymentId, amount === undefined ? {} : { amount });
      say(`POST /v1/payments/${paymentId}/refund${amount === undefined ? ' (full)' : ` (${amount})`} → ${r.status}`);
      const done = await follow(
        'refund',
        async () => (await api.refunds.list(paymentId)).data.find((x) => x.id === r.id) as Operation,
      );
      results.push([`refund ${amount === undefined ? 'full' : 'partial'}`, done.status, 'succeeded', 'status', true]);
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
    results.push(['payout via airtel', paid.status, 'succeeded', 'status', true]);

    // cards through the Mastercard Gateway simulator: the checkout as a browser would drive it
    const card = async (label: string, number: string, expiry: string, expected: string, challenge = false) => {
      const p = await api.payments.create({
        amount: 2_500,
        currency: 'USD',
        method: 'card',
        reference: `demo-live-card-${randomUUID()}`,
        description: 'Demo live card payment',
        customer_email: 'client@shop.example',
        customer_name: 'Amani Client',
        return_url: 'https://shop.example/return',
      });
      say(`POST /v1/payments (card, 2500 USD minor) → ${p.status}, provider ${p.provider}`);
      const paid = await payByCard(baseUrl, mpgs, p.id, { number, expiry });
      say(`POST /checkout/${p.id}/pay (card ${number.slice(0, 6)}…, expiry ${expiry}) → ${paid.status}`);
      if (challenge) {
        const url = await challengeOf(p.id);
        say(`payment ${p.id}: 3-D Secure challenge at ${url ?? '(none)'}; the payer approves it`);
        if (url)
          say(`POST /checkout/${p.id}/3ds-return (the gateway's form post) → ${await endChallenge(mpgs, p.id, true)}`);
      }
      const done = await follow(`card ${label}`, () => api.payments.retrieve(p.id) as Promise<Operation>);
      const row = await db('payments').where({ id: p.id }).first('amount_net');
      const gw = atGateway(mpgs.transactions(), p.id);
      const credit = (await creditsOf(db, [p.id])).get(p.id) ?? { n: 0, amount: 0 };
      const events = await eventCounts(db, p.id);
      const succeeded = expected === 'succeeded';
      const checks: [string, boolean][] = [
        [`gateway PAY ${gw.pays}, approved ${gw.paid}`, gw.pays === 1 && gw.paid === (succeeded ? 1 : 0)],
        [
          `ledger credit ${credit.amount} of net ${row.amount_net} (${credit.n} posting)`,
          succeeded ? credit.n === 1 && credit.amount === Number(row.amount_net) : credit.n === 0,
        ],
        [
          `event payment.${expected} ×${events[`payment.${expected}`] ?? 0}`,
          events[`payment.${expected}`] === 1 && !events[`payment.${succeeded ? 'failed' : 'succeeded'}`],
        ],
      ];
      const failure = done.failure_code ? ` (${done.failure_code})` : '';
      results.push([
        `card ${label}`,
        `${done.status}${failure}`,
        expected,
        checks.map(([c]) => c).join('; '),
        checks.every(([, held]) => held),
      ]);
      return done;
    };
    const challengeOf = async (id: string) => {
      for (let i = 0; i < 150; i++) {
        const row = await db('payments').where({ id }).first('status', 'challenge_url');
        if (row?.challenge_url) return row.challenge_url as string;
        if (row && !['pending', 'processing'].includes(row.status)) return undefined;
        await new Promise((r) => setTimeout(r, 200));
      }
      return undefined;
    };
    const approved = await card('frictionless', CARDS.frictionless, EXPIRY.approved, 'succeeded');
    await card('challenge approved', CARDS.challenge, EXPIRY.approved, 'succeeded', true);
    await card('declined', CARDS.frictionless, EXPIRY.declined, 'failed');

    // the operator's partial refund of the approved card payment, through the gateway's REFUND
    const refundRes = await fetch(`${baseUrl}/admin/payments/${approved.id}/refunds`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${ADMIN_TOKEN}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': randomUUID(),
      },
      body: JSON.stringify({ amount: 1_000, reason: 'demo: one bag returned' }),
    });
    const cardRefund = (await refundRes.json()) as Operation;
    say(`POST /admin/payments/${approved.id}/refunds (1000) → ${refundRes.status} ${cardRefund.status ?? ''}`);
    const refunded =
      refundRes.status === 201
        ? await follow(
            'card refund',
            async () => (await db('refunds').where({ id: cardRefund.id }).first()) as Operation,
          )
        : { ...cardRefund, status: `HTTP ${refundRes.status}` };
    const gwRefunds = atGateway(mpgs.transactions(), approved.id).refunds;
    const refundPostings: string[] = (
      await db('ledger_transactions')
        .where({ reference_id: cardRefund.id ?? '' })
        .orderBy('kind')
        .select('kind')
    ).map((r: { kind: string }) => r.kind);
    const refundEvents = cardRefund.id ? await eventCounts(db, cardRefund.id) : {};
    const payAfter = await db('payments').where({ id: approved.id }).first('amount_refunded', 'status');
    const refundChecks: [string, boolean][] = [
      [
        `gateway REFUND ${gwRefunds.map((t) => t.amount).join(', ') || 'none'}`,
        gwRefunds.length === 1 && gwRefunds[0].amount === '10.00',
      ],
      // the debit at creation (available to in transit), the delivery once the gateway confirmed; no return
      [
        `ledger ${refundPostings.join(' + ') || 'no posting'}`,
        refundPostings.join(' ') === 'refund_debit refund_deliver',
      ],
      [`event refund.succeeded ×${refundEvents['refund.succeeded'] ?? 0}`, refundEvents['refund.succeeded'] === 1],
      [
        `payment ${payAfter.status}, refunded ${payAfter.amount_refunded}`,
        payAfter.status === 'succeeded' && Number(payAfter.amount_refunded) === 1_000,
      ],
    ];
    results.push([
      'card operator refund (partial, 1000)',
      refunded.status,
      'succeeded',
      refundChecks.map(([c]) => c).join('; '),
      refundChecks.every(([, held]) => held),
    ]);
    const ledgerProblems = await checkLedger(db);
    results.push([
      'ledger:check',
      ledgerProblems.length ? `${ledgerProblems.length} problems` : 'ok',
      'ok',
      ledgerProblems.slice(0, 3).join('; ') || 'every transaction sums to zero, every balance equals its entries',
      true,
    ]);

    console.log('\n| operation | status | expected | checked | held |\n|---|---|---|---|---|');
    for (const [what, status, expected, checked, held] of results)
      console.log(`| ${what} | ${status} | ${expected} | ${checked} | ${held ? 'yes' : 'NO'} |`);
    const simRows = [
      ...pawapay.transactions().map((t) => ['pawaPay', t]),
      ...airtel.transactions().map((t) => ['Airtel', t]),
    ] as [string, { id: string; status: string; initiations: number }][];
    console.log('\n| simulator | transaction | final state | initiations |\n|---|---|---|---|');
    for (const [sim, t] of simRows) console.log(`| ${sim} | ${t.id} | ${t.status} | ${t.initiations} |`);
    const cardRows = mpgs
      .transactions()
      .map((t) => [
        t.orderId,
        `${t.id} ${t.type}`,
        `${t.result} ${t.gatewayCode}${t.amount ? ` ${t.amount} ${t.currency}` : ''}`,
        t.requests,
      ]);
    console.log('\n| Mastercard Gateway order | transaction | result | requests |\n|---|---|---|---|');
    for (const [order, txn, result, requests] of cardRows)
      console.log(`| ${order} | ${txn} | ${result} | ${requests} |`);
    ok = results.every(([, status, expected, , held]) => held && status.split(' ')[0] === expected);
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
