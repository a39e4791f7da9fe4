/**
 * npm run bench:money-out: POST /v1/payouts and POST /v1/payments/{id}/refund through the whole
 * service (pipeline, one transaction with the ledger debit, outbox), at saturation, where money
 * leaving one balance must be serialised and money leaving many balances need not be.
 *
 *   payouts, one merchant     every request debits the same merchant's accounts
 *   payouts, many merchants   each request debits one of BENCH_MERCHANTS merchants' accounts
 *   refunds, one payment      every request refunds 1 unit of the same payment (its row lock)
 *   refunds, many payments    each request refunds 1 unit of one of BENCH_MERCHANTS payments
 *
 * Balances and payments are seeded large enough that nothing is refused: every answer must be
 * 201 or the figures are void. The send jobs wait in Redis (no pool runs). Afterwards the ledger
 * is checked (every balance equals its entries) and the balances are compared with the number
 * of 201 answers. Options: BENCH_DURATION seconds per run (default 10), BENCH_CONNECTIONS
 * (default 32), BENCH_MERCHANTS (default 32). Uses a throwaway database cloned from the migrated
 * template on TEST_DATABASE_SERVER_URL's server, and REDIS_URL.
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { buildApp } from '../api/app';
import { signRequest } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { closeServer, listen, percentile, portOf, runBench } from './bench-common';
import { createContext } from '../shared/context';
import { newId } from '../shared/ids';
import { paymentCredit } from '../shared/rules/ledger';
import { checkLedger } from '../shared/ledger/check';
import { post } from '../shared/ledger/postings';
import { ask, forkRole, stopRole } from './lib/processes';
import { seedMerchant, setUpStack, stopOnRequest } from './lib/stack';

const SEED = 1_000_000_000; // minor units per merchant and per payment: never short during a run

interface Shop {
  merchantId: string;
  apiKey: string;
  secret: string;
  paymentId: string;
}
type Message = { cmd: 'check' };

/** A succeeded mobile-money payment of SEED, written as the payment flow leaves it, with its credit. */
async function seedPayment(db: ReturnType<typeof createContext>['db'], merchantId: string): Promise<string> {
  const id = newId('payment');
  await db.transaction(async (trx) => {
    await trx('payments').insert({
      id,
      merchant_id: merchantId,
      environment: 'test',
      status: 'succeeded',
      method: 'mobile_money',
      currency: 'USD',
      amount: SEED,
      amount_charged: SEED,
      amount_net: SEED,
      fee: 0,
      fee_bearer: 'merchant',
      reference: `seed-${id}`,
      metadata: '{}',
      operator: 'vodacom',
      phone: '243990000001',
      provider: 'vodacom-sandbox',
      created: Math.floor(Date.now() / 1000),
      completed: Math.floor(Date.now() / 1000),
      window_ends_at: new Date(),
    });
    await post(
      trx,
      paymentCredit({
        paymentId: id,
        merchantId,
        environment: 'test',
        currency: 'USD',
        amountCharged: SEED,
        amountNet: SEED,
        fee: 0,
      }),
    );
  });
  return id;
}

/** Child: the web app on its own database and queues. */
async function serve(): Promise<void> {
  const stack = await setUpStack();
  const config = loadConfig(stack.env);
  const services = createContext({ role: 'web', name: 'bench', config, poolMax: 20 });
  stack.teardown.add(() => services.close());
  const shops: Shop[] = [];
  for (let i = 0; i < Number(process.env.BENCH_MERCHANTS || 32); i++) {
    const m = await seedMerchant(services, { name: `Bench ${i}`, fees: { USD: { percent_bps: 100, fixed: 10 } } });
    shops.push({
      merchantId: m.id,
      apiKey: m.apiKey,
      secret: m.secret,
      paymentId: await seedPayment(services.db, m.id),
    });
  }
  const server = await listen(buildApp(services));
  stack.teardown.add(() => closeServer(server));

  process.on('message', async (m: Message) => {
    if (m.cmd !== 'check') return;
    const problems = await checkLedger(services.db);
    const totals = await services
      .db('ledger_transactions')
      .groupBy('kind')
      .select('kind', services.db.raw('count(*)::int as n'));
    process.send!({ problems, totals });
  });
  stopOnRequest(stack.teardown);
  process.send!({ port: portOf(server), shops });
}

/** Parent: the load. */
async function bench(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION || 10);
  const connections = Number(process.env.BENCH_CONNECTIONS || 32);
  const {
    child,
    ready: { port, shops },
  } = await forkRole<{ port: number; shops: Shop[] }>(__filename, '--serve');

  const signed = (shop: Shop, path: string, body: string) => {
    const ts = String(Math.floor(Date.now() / 1000));
    return {
      method: 'POST',
      path,
      body,
      headers: {
        authorization: `Bearer ${shop.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
        'x-timestamp': ts,
        'x-signature': signRequest(shop.secret, ts, 'POST', path, body),
      },
    };
  };
  const pick = (many: boolean) => shops[many ? Math.floor(Math.random() * shops.length) : 0];
  const payout = (many: boolean) => () =>
    signed(
      pick(many),
      '/v1/payouts',
      JSON.stringify({
        amount: 1_000,
        currency: 'USD',
        operator: 'vodacom',
        phone: '243990000001',
        reference: randomUUID(),
      }),
    );
  const refund = (many: boolean) => () => {
    const shop = pick(many);
    // a reason of its own: two equal bodies signed in the same second are one request sent twice
    // (409 request-replayed), as a merchant's would be
    const body = JSON.stringify({ amount: 1, reason: randomUUID() });
    return signed(shop, `/v1/payments/${shop.paymentId}/refund`, body);
  };

  async function run(name: string, setupRequest: () => object, seconds = duration) {
    const latencies: number[] = [];
    const r = await new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon(
        {
          url: `http://127.0.0.1:${port}`,
          connections,
          pipelining: 1,
          duration: seconds,
          requests: [{ setupRequest: (req: object) => ({ ...req, ...setupRequest() }) }],
        },
        (err, result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
      );
      instance.on('response', (_c, _s, _b, ms) => latencies.push(ms));
    });
    latencies.sort((a, b) => a - b);
    return {
      name,
      ok: r['2xx'],
      rps: r['2xx'] / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      errors: r.non2xx + r.errors + r.timeouts,
      /** the answers that were not 201, by status (what makes a run's figures void) */
      refused: Object.entries(r.statusCodeStats ?? {})
        .filter(([status]) => status !== '201')
        .map(([status, { count }]) => `${status} × ${count}`),
    };
  }

  try {
    await run('warm-up', payout(true), 2);
    const runs = [
      await run('payouts, one merchant', payout(false)),
      await run(`payouts, ${shops.length} merchants`, payout(true)),
      await run('refunds, one payment', refund(false)),
      await run(`refunds, ${shops.length} payments`, refund(true)),
    ];
    const { problems, totals } = await ask<{ problems: string[]; totals: { kind: string; n: number }[] }>(child, {
      cmd: 'check',
    });
    console.log(`\nmoney-out bench: ${duration} s per run, ${connections} connections, node ${process.version}\n`);
    console.log('run                          created/s   p50 ms   p99 ms  errors');
    for (const r of runs) {
      console.log(
        `${r.name.padEnd(27)}  ${r.rps.toFixed(0).padStart(9)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ${String(r.errors).padStart(6)}`,
      );
    }
    // every answer must be 201, or the run measured refusals
    for (const r of runs.filter((x) => x.errors > 0)) {
      console.log(`VOID ${r.name}: ${r.errors} answers not 201 (${r.refused.join(', ') || 'errors, timeouts'})`);
      process.exitCode = 1;
    }
    const debits = Object.fromEntries(totals.map((t) => [t.kind, t.n]));
    console.log(
      `\nledger postings: ${JSON.stringify(debits)}; ledger check: ${problems.length ? `${problems.length} PROBLEM(S)` : 'ok'}`,
    );
  } finally {
    await stopRole(child);
  }
}

runBench({ '--serve': serve }, bench);
