/**
 * npm run demo:reconcile: a day of payments, refunds and payouts with LIVE keys through the
 * pawaPay simulator and the Airtel simulator, one of each discrepancy injected at each provider,
 * then each day reconciled (docs/reconciliation.md: pawaPay's statement fetched by the run,
 * Airtel's report written by its simulator and uploaded through the admin API) and its table
 * printed. Injected at each:
 * - a completed deposit whose callback never came and whose status queries failed (status-mismatch,
 *   settled by the run's own status query);
 * - a later reversal (reversed);
 * - a fee other than the contract's, and an amount changed (amount-mismatch);
 * - a transaction we never created (missing-here);
 * - a completed payment left off the statement (missing-there).
 * Airtel's refund is in full (Airtel refunds no less).
 * Exit 0 only when each injected discrepancy is found in its category, nothing else is flagged,
 * and the wallet difference is the one the injections make; 1 otherwise.
 *
 * Needs Postgres and Redis as `npm test` does; touches no database but its own. The day is
 * reconciled as soon as the money has moved (`force`: the provider's lag is not waited for).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createMerchantWithKey, follow as followStatus, merchantSdk, operatorApi } from './lib/demo';
import { freePort } from './lib/ports';
import { startProcess, sleep, type RunningProcess } from './lib/processes';
import { setUpStack } from './lib/stack';
import { startPawapaySimulator } from './simulators/pawapay/simulator';
import { startAirtelSimulator } from './simulators/airtel/simulator';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { reconcileDay } from '../shared/reconciliation/run';
import { businessDay, dayBounds } from '../shared/reconciliation/days';
import type { ServiceContext } from '../shared/context';
import { fromAirtelId } from '../shared/providers/airtel/wire';
import { CATEGORIES, type Category } from '../shared/providers/report';

const ADMIN_TOKEN = `demo-recon-admin-${randomBytes(8).toString('hex')}`;
const PAWAPAY_TOKEN = 'demo-pawapay-token';
const AIRTEL_PIN = '2468';
const CONTRACT_BPS = 100;
const POOLS = [
  'workers/outbox-relay/index.ts',
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
];
const started = Date.now();
const say = (line: string) => console.log(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  ${line}`);
const uuid = (id: string) => id.slice(id.indexOf('_') + 1);

interface Operation {
  id: string;
  status: string;
}

async function main() {
  const [webPort, pawapayPort, airtelPort] = [await freePort(), await freePort(), await freePort()];
  const baseUrl = `http://127.0.0.1:${webPort}`;
  const pawapay = await startPawapaySimulator({
    port: pawapayPort,
    callbackUrl: `${baseUrl}/callbacks/pawapay`,
    token: PAWAPAY_TOKEN,
    callbackDelayMs: 200,
    statements: { feeBps: CONTRACT_BPS, buildMs: 300 },
  });
  const airtel = await startAirtelSimulator({
    port: airtelPort,
    callbackUrl: `${baseUrl}/callbacks/airtel`,
    callbackDelayMs: 200,
    finalAfterMs: 300,
    pin: AIRTEL_PIN,
    feeBps: CONTRACT_BPS,
  });
  const ports = { sandbox: await freePort(), cardVault: await freePort(), cardProvider: await freePort() };
  const stack = await setUpStack({
    name: 'demo-recon-',
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
      PAWAPAY_URL: pawapay.url,
      PAWAPAY_API_TOKEN: PAWAPAY_TOKEN,
      LIVE_AIRTEL: 'airtel',
      AIRTEL_URL: airtel.url,
      AIRTEL_CLIENT_ID: 'sim-client-id',
      AIRTEL_CLIENT_SECRET: 'sim-client-secret',
      AIRTEL_DISBURSEMENT_PIN: AIRTEL_PIN,
      AIRTEL_PIN_PUBLIC_KEY: airtel.publicKeyPem,
      // the lost payment is asked about soon, and its status query fails
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_WINDOW_MS: '1000',
      ASK_INTERVAL_MS: '300',
      RECONCILIATION_CONTRACT_FEES_BPS: `pawapay=${CONTRACT_BPS},airtel=${CONTRACT_BPS}`,
      RECONCILIATION_BALANCE_THRESHOLD: '0',
      SANDBOX_PROVIDER_PORT: String(ports.sandbox),
      CARD_VAULT_PORT: String(ports.cardVault),
      CARD_PROVIDER_PORT: String(ports.cardProvider),
    }),
  });
  stack.teardown.onSignals();
  stack.teardown.add(() => pawapay.close());
  stack.teardown.add(() => airtel.close());
  say(
    `pawaPay simulator ${pawapay.url}, Airtel simulator ${airtel.url} (provider fee ${CONTRACT_BPS} bps); database ${stack.database.name}`,
  );
  const processes: RunningProcess[] = [];
  // the pools (processes[1..]); the web stays up: it receives the statement callback that wakes the run
  const stopPools = () => Promise.all(processes.splice(1).map((p) => p.stop()));
  stack.teardown.add(() => Promise.all(processes.splice(0).map((p) => p.stop())));
  const failures: string[] = [];
  try {
    for (const entry of ['api/server.ts', ...POOLS]) {
      const p = startProcess(entry, stack.env);
      processes.push(p);
      await p.waitForLine((l) => typeof l === 'object' && /started|listening/.test(l?.msg ?? ''));
    }
    say(`service on ${baseUrl}; live vodacom and orange routed to pawaPay, airtel to Airtel`);
    const merchant = await createMerchantWithKey(
      operatorApi(baseUrl, ADMIN_TOKEN),
      {
        name: 'Demo reconciled shop',
        fees: { USD: { percent_bps: 250, fixed: 0 }, CDF: { percent_bps: 250, fixed: 0 } },
      },
      { environment: 'live', scope: 'full' },
    );
    const api = merchantSdk(baseUrl, merchant.credential);
    const follow = (label: string, read: () => Promise<Operation>) =>
      followStatus(read, { everyMs: 200, timeoutMs: 60_000, onRead: () => undefined }).then((op) => {
        say(`${label} ${op.id}: ${op.status}`);
        return op;
      });
    const pay = async (
      label: string,
      phone: string,
      amount: number,
      wait = true,
      operator: 'vodacom' | 'airtel' = 'vodacom',
    ) => {
      const p = await api.payments.create({
        amount,
        currency: 'USD',
        method: 'mobile_money',
        operator,
        phone,
        reference: `demo-recon-${randomUUID()}`,
      });
      if (!wait) {
        say(`${label} ${p.id}: ${p.status}`);
        return p.id;
      }
      return (await follow(label, () => api.payments.retrieve(p.id))).id;
    };

    // the day's money: operations that agree, and one for each discrepancy
    const ok1 = await pay('payment', '243810000789', 5_000);
    const ok2 = await pay('payment', '243810001789', 12_000);
    await pay('payment declined', '243810002019', 3_000);
    const lost = await pay('payment (callback lost, status query failing)', '243810003209', 2_500, false);
    const reversed = await pay('payment (to be reversed)', '243810004789', 4_000);
    const fee = await pay('payment (another fee)', '243810005789', 6_000);
    const amount = await pay('payment (another amount)', '243810006789', 7_000);
    const omitted = await pay('payment (left off the statement)', '243810007789', 3_500);
    const refund = await api.refunds.create(ok1, { amount: 1_500 });
    await follow('refund', async () => (await api.refunds.list(ok1)).data.find((x) => x.id === refund.id) as Operation);
    const payout = await api.payouts.create({
      amount: 2_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243810008789',
      reference: `demo-recon-po-${randomUUID()}`,
    });
    await follow('payout', () => api.payouts.retrieve(payout.id));
    void ok2;

    // the same day at Airtel: its lost payment completes without a callback, its enquiries fail
    const airtelPay = (label: string, phone: string, amount: number, wait = true) =>
      pay(`airtel ${label}`, phone, amount, wait, 'airtel');
    const a = {
      ok: await airtelPay('payment', '243970000001', 5_000),
      lost: await airtelPay('payment (callback lost, enquiry failing)', '243970000050', 2_500, false),
      reversed: await airtelPay('payment (to be reversed)', '243970000001', 4_000),
      fee: await airtelPay('payment (another fee)', '243970000001', 6_000),
      amount: await airtelPay('payment (another amount)', '243970000001', 7_000),
      omitted: await airtelPay('payment (left off the report)', '243970000001', 3_500),
    };
    await airtelPay('payment declined', '243970000002', 3_000);
    const aRefund = await api.refunds.create(a.ok, {});
    await follow(
      'airtel refund',
      async () => (await api.refunds.list(a.ok)).data.find((x) => x.id === aRefund.id) as Operation,
    );
    const aPayout = await api.payouts.create({
      amount: 2_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: '243970000001',
      reference: `demo-recon-po-${randomUUID()}`,
    });
    await follow('airtel payout', () => api.payouts.retrieve(aPayout.id));

    // the lost payment: pawaPay completed it, no callback came, and the sweep's status queries fail
    const lostUuid = uuid(lost);
    for (let i = 0; i < 100 && !pawapay.transactions().some((t) => t.id === lostUuid && t.statusQueries > 0); i++)
      await sleep(200);
    const lostNow = (await api.payments.retrieve(lost)).status;
    say(`${lost}: ${lostNow} here, COMPLETED at pawaPay, its status query answered 500`);
    if (lostNow !== 'processing') failures.push(`the lost payment is ${lostNow}, not processing, before the run`);
    const airtelIdOf = (id: string) =>
      `${{ pay: 'P', re: 'R', po: 'O' }[id.slice(0, id.indexOf('_'))]}${uuid(id).replace(/-/g, '')}`;
    for (let i = 0; i < 100 && !airtel.transactions().some((t) => t.id === airtelIdOf(a.lost) && t.enquiries > 0); i++)
      await sleep(200);
    const aLostNow = (await api.payments.retrieve(a.lost)).status;
    say(`${a.lost}: ${aLostNow} here, TS at Airtel, its enquiry answered 500`);
    if (aLostNow !== 'processing')
      failures.push(`the lost Airtel payment is ${aLostNow}, not processing, before the run`);

    // what the provider's books say that ours do not
    pawapay.finances.reverse(uuid(reversed));
    const feeTaken = 777;
    pawapay.finances.setFee(uuid(fee), feeTaken);
    pawapay.finances.setAmount(uuid(amount), 6_900);
    pawapay.finances.omit(uuid(omitted));
    const foreign = pawapay.finances.foreignDeposit(1_234, 'USD');
    say(
      `injected at pawaPay: reversal of ${reversed}, fee ${feeTaken} on ${fee}, amount 6900 on ${amount}, ` +
        `${omitted} left off, a deposit ${foreign} we never made`,
    );
    airtel.finances.reverse(airtelIdOf(a.reversed));
    airtel.finances.setFee(airtelIdOf(a.fee), feeTaken);
    airtel.finances.setAmount(airtelIdOf(a.amount), 6_900);
    airtel.finances.omit(airtelIdOf(a.omitted));
    const aForeign = airtel.finances.foreignCollection(1_234, 'USD');
    say(
      `injected at Airtel: reversal of ${a.reversed}, fee ${feeTaken} on ${a.fee}, amount 6900 on ${a.amount}, ` +
        `${a.omitted} left off, a collection ${aForeign} we never made`,
    );
    // from here only the reconciliation asks the providers: its status query is the one that settles the lost payments
    await stopPools();
    pawapay.endStatusOutage();
    airtel.endEnquiryOutage();

    const ctx = createContext({
      role: 'worker',
      name: 'demo-reconcile',
      config: loadConfig({ ...stack.env, LOG_LEVEL: 'warn' }),
      poolMax: 4,
    });
    stack.teardown.add(() => ctx.close());
    const day = businessDay(Date.now(), ctx.config.reconciliation.timeZone);
    failures.push(
      ...(await reconcileAndCheck(ctx, 'pawapay', day, {
        lost,
        reversed,
        fee,
        amount,
        omitted,
        foreign: (theirs) => theirs?.our_id === `pay_${foreign}`,
      })),
    );

    // Airtel's report: written by its simulator for the day, uploaded as an operator would
    const { start, end } = dayBounds(day, ctx.config.reconciliation.timeZone);
    const upload = await fetch(`${baseUrl}/admin/reconciliation/statements?connector=airtel`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'text/csv' },
      body: airtel.finances.report('USD', { from: start, to: end }),
    });
    const uploaded = (await upload.json()) as { lines?: number };
    say(`Airtel report uploaded: HTTP ${upload.status}, ${uploaded.lines ?? '?'} lines`);
    if (upload.status !== 201) failures.push(`the Airtel report upload answered ${upload.status}`);
    failures.push(
      ...(await reconcileAndCheck(ctx, 'airtel', day, {
        ...a,
        foreign: (theirs) => theirs?.our_id === fromAirtelId(aForeign)?.id,
      })),
    );
  } catch (err) {
    failures.push(`the demo stopped: ${(err as Error).message}`);
  } finally {
    await stack.tearDown();
  }
  if (failures.length) {
    console.log(`\ndemo:reconcile: FAILED\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exit(1);
  }
  console.log('\ndemo:reconcile: every injected discrepancy found in its category, nothing else flagged');
  process.exit(0);
}

interface Injected {
  lost: string;
  reversed: string;
  fee: string;
  amount: string;
  omitted: string;
  /** the line of the transaction we never created */
  foreign: (theirs: Record<string, unknown> | undefined) => boolean;
}

/** Reconciles the connector's day, prints its tables, and lists what is not as injected. */
async function reconcileAndCheck(
  ctx: ServiceContext,
  connector: string,
  day: string,
  injected: Injected,
): Promise<string[]> {
  const failures: string[] = [];
  const { lost, reversed, fee, amount, omitted } = injected;
  say(`reconciling ${connector} ${day}`);
  const run = await reconcileDay(ctx, connector, day, { force: true });

  console.log(`\nreconciliation ${run.id}: ${run.connector} ${run.day}\n`);
  console.log('| category | items |\n|---|---|');
  for (const c of CATEGORIES) console.log(`| ${c} | ${run.counts[c]} |`);
  console.log(
    '\n| currency | provider fees | wallet reported | wallet expected | difference | flagged |\n|---|---|---|---|---|---|',
  );
  for (const b of run.balances)
    console.log(
      `| ${b.currency} | ${run.fees[b.currency] ?? 0} | ${b.reported} | ${b.expected} | ${b.difference} | ${b.flagged ? 'yes' : 'no'} |`,
    );
  const items = await ctx
    .db('reconciliation_items')
    .where({ run_id: run.id })
    .whereNot({ category: 'matched' })
    .orderBy('id')
    .select('category', 'object_id', 'resolved_at', 'details');
  console.log('\n| category | ours | theirs | resolved |\n|---|---|---|---|');
  for (const i of items)
    console.log(
      `| ${i.category} | ${i.object_id ?? '-'} | ${i.details?.theirs ? `${i.details.theirs.kind} ${i.details.theirs.amount} ${i.details.theirs.currency} fee ${i.details.theirs.fee}` : '-'} | ${i.resolved_at ? `yes (status query: ${i.details.status_after})` : 'no'} |`,
    );
  for (const s of run.settled) say(`status query: ${s.object_id} → ${s.status}`);

  // what was injected, where it must be found; nothing else
  const expected: [Category, string | null, string][] = [
    ['status-mismatch', lost, 'the lost callback'],
    ['reversed', reversed, 'the reversal'],
    ['amount-mismatch', fee, 'the fee'],
    ['amount-mismatch', amount, 'the amount'],
    ['missing-here', null, 'the foreign deposit'],
    ['missing-there', omitted, 'the omitted payment'],
  ];
  const left = [...items];
  for (const [category, id, what] of expected) {
    const at = left.findIndex(
      (i) =>
        i.category === category &&
        (id ? i.object_id === id : i.object_id === null && injected.foreign(i.details?.theirs)),
    );
    if (at < 0) failures.push(`${connector}: ${what} (${id ?? 'foreign'}) was not found as ${category}`);
    else left.splice(at, 1);
  }
  for (const i of left)
    failures.push(`${connector}: flagged but not injected: ${i.category} ${i.object_id ?? '(no operation)'}`);
  const settled = run.settled.find((s) => s.object_id === lost);
  if (settled?.status !== 'succeeded')
    failures.push(`${connector}: the status query did not settle ${lost}: ${settled?.status}`);
  const usd = run.balances.find((b) => b.currency === 'USD');
  // the reversal takes 4,000, the amount changed 100 less, the foreign deposit brings 1,234, the omitted 3,500 never
  // came (every fee the statement shows is posted, so fees leave no difference)
  const explained = -4_000 - 100 + 1_234 - 3_500;
  if (!usd) failures.push('no USD wallet reading');
  else if (usd.difference !== explained)
    failures.push(`${connector}: the USD wallet differs by ${usd.difference}, the injections explain ${explained}`);
  else say(`${connector} USD wallet difference ${usd.difference}: exactly what the injections explain`);
  return failures;
}

void main();
