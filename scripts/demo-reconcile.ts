/**
 * npm run demo:reconcile: a day of payments, refunds and payouts with LIVE keys through the
 * pawaPay simulator, one of each discrepancy injected at the provider, then the day reconciled
 * (docs/reconciliation.md) and its table printed. Injected:
 * - a completed deposit whose callback never came and whose status queries failed (status-mismatch,
 *   settled by the run's own status query);
 * - a later reversal (reversed);
 * - a fee other than the contract's, and an amount changed (amount-mismatch);
 * - a transaction we never created (missing-here);
 * - a completed payment left off the statement (missing-there).
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
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { reconcileDay } from '../shared/reconciliation/run';
import { businessDay } from '../shared/reconciliation/days';
import { CATEGORIES, type Category } from '../shared/providers/report';

const ADMIN_TOKEN = `demo-recon-admin-${randomBytes(8).toString('hex')}`;
const PAWAPAY_TOKEN = 'demo-pawapay-token';
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
  const [webPort, pawapayPort] = [await freePort(), await freePort()];
  const baseUrl = `http://127.0.0.1:${webPort}`;
  const pawapay = await startPawapaySimulator({
    port: pawapayPort,
    callbackUrl: `${baseUrl}/callbacks/pawapay`,
    token: PAWAPAY_TOKEN,
    callbackDelayMs: 200,
    statements: { feeBps: CONTRACT_BPS, buildMs: 300 },
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
      // the lost payment is asked about soon, and its status query fails
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_WINDOW_MS: '1000',
      ASK_INTERVAL_MS: '300',
      RECONCILIATION_CONTRACT_FEES_BPS: `pawapay=${CONTRACT_BPS}`,
      RECONCILIATION_BALANCE_THRESHOLD: '0',
      SANDBOX_PROVIDER_PORT: String(ports.sandbox),
      CARD_VAULT_PORT: String(ports.cardVault),
      CARD_PROVIDER_PORT: String(ports.cardProvider),
    }),
  });
  stack.teardown.onSignals();
  stack.teardown.add(() => pawapay.close());
  say(`pawaPay simulator ${pawapay.url} (provider fee ${CONTRACT_BPS} bps); database ${stack.database.name}`);
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
    say(`service on ${baseUrl}; live vodacom and orange routed to pawaPay`);
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
    const pay = async (label: string, phone: string, amount: number, wait = true) => {
      const p = await api.payments.create({
        amount,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
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

    // the lost payment: pawaPay completed it, no callback came, and the sweep's status queries fail
    const lostUuid = uuid(lost);
    for (let i = 0; i < 100 && !pawapay.transactions().some((t) => t.id === lostUuid && t.statusQueries > 0); i++)
      await sleep(200);
    const lostNow = (await api.payments.retrieve(lost)).status;
    say(`${lost}: ${lostNow} here, COMPLETED at pawaPay, its status query answered 500`);
    if (lostNow !== 'processing') failures.push(`the lost payment is ${lostNow}, not processing, before the run`);

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
    // from here only the reconciliation asks pawaPay: its status query is the one that settles the lost payment
    await stopPools();
    pawapay.endStatusOutage();

    const ctx = createContext({
      role: 'worker',
      name: 'demo-reconcile',
      config: loadConfig({ ...stack.env, LOG_LEVEL: 'warn' }),
      poolMax: 4,
    });
    stack.teardown.add(() => ctx.close());
    const day = businessDay(Date.now(), ctx.config.reconciliation.timeZone);
    say(`reconciling pawapay ${day}`);
    const run = await reconcileDay(ctx, 'pawapay', day, { force: true });

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
          (id ? i.object_id === id : i.object_id === null && i.details?.theirs?.our_id === `pay_${foreign}`),
      );
      if (at < 0) failures.push(`${what} (${id ?? foreign}) was not found as ${category}`);
      else left.splice(at, 1);
    }
    for (const i of left) failures.push(`flagged but not injected: ${i.category} ${i.object_id ?? '(no operation)'}`);
    const settled = run.settled.find((s) => s.object_id === lost);
    if (settled?.status !== 'succeeded') failures.push(`the status query did not settle ${lost}: ${settled?.status}`);
    const usd = run.balances.find((b) => b.currency === 'USD');
    // the reversal takes 4,000, the amount changed 100 less, the foreign deposit brings 1,234, the omitted 3,500 never
    // came (every fee the statement shows is posted, so fees leave no difference)
    const explained = -4_000 - 100 + 1_234 - 3_500;
    if (!usd) failures.push('no USD wallet reading');
    else if (usd.difference !== explained)
      failures.push(`the USD wallet differs by ${usd.difference}, the injections explain ${explained}`);
    else say(`USD wallet difference ${usd.difference}: exactly what the injections explain`);
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

void main();
