import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startMpgsSimulator, type MpgsSimulator } from '../../scripts/simulators/mpgs/server';
import { cardPaymentBody, pay, waitForRow } from '../helpers/cards';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';
import { businessDay, dayBounds } from '../../shared/reconciliation/days';

/**
 * Daily reconciliation of the card gateway (docs/reconciliation.md) from an uploaded report: a
 * day of live card payments through the MPGS connector against its simulator (the card put in the
 * gateway session as the hosted fields would, no browser), an operator refund, and one of each
 * discrepancy injected on the report the simulator writes (scripts/simulators/mpgs/report.ts); the
 * report uploaded through the admin API as `mpgs-csv`, the day run, and each category checked.
 */

const TZ = 'Africa/Kinshasa';
const LAG_MS = 3_600_000;
const SECRET = 'mpgs-notification-secret-0123456789';
const MERCHANT = 'TESTKINCAFE01';
const BROWSER = {
  acceptHeaders: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  colorDepth: 24,
  javaEnabled: false,
  language: 'fr-CD',
  screenHeight: 900,
  screenWidth: 1440,
  timeZone: -60,
};

describe('daily reconciliation of the card gateway against its uploaded report', function () {
  this.timeout(180_000);
  let sim: MpgsSimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const processes: RunningProcess[] = [];
  const ids: Record<string, string> = {};
  let foreign = '';
  let day = '';
  let report = '';
  let run: any;
  let ip = 1;
  const clockOf = { now: () => Date.now() };

  /** A card payment of `amount` paid through the checkout with a frictionless approved card. */
  const paid = async (amount = 2_500) => {
    const created = await shop.client.post(
      '/v1/payments',
      cardPaymentBody({ amount, reference: `rec-${randomUUID()}` }),
    );
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.id as string;
    const page = await (await fetch(`${env.baseUrl}/checkout/${id}`)).text();
    const session = /data-session="([^"]+)"/.exec(page)?.[1];
    expect(session, 'the page names its gateway session').to.match(/^SESSION/);
    sim.putCard(session!, { number: '2223000000000007', expiryMonth: '01', expiryYear: '39', securityCode: '100' });
    const res = await pay(env.baseUrl, id, { session, browser: BROWSER }, { 'X-Forwarded-For': `198.51.100.${ip++}` });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const row = await waitForRow(env, id, (r) => !['pending', 'processing'].includes(r.status), 30_000);
    expect(row.status, id).to.equal('succeeded');
    return id;
  };
  // the gateway's export carries no period: the operator names the day it searched (from=&to=)
  const upload = (body: string, query = `&from=${day}&to=${day}`) =>
    env.admin('POST', `/admin/reconciliation/statements?connector=mpgs&format=mpgs-csv${query}`, body, {
      'Content-Type': 'text/csv',
    });
  const count = async (table: string) => Number((await env.services.db(table).count('* as n'))[0].n);

  before(async () => {
    sim = await startMpgsSimulator({
      merchantId: MERCHANT,
      apiPassword: 'sim-api-password',
      notificationSecret: SECRET,
      notificationRetryMs: 100,
      now: () => clockOf.now(),
    });
    env = await startTestEnv({
      LIVE_CARD: 'mpgs',
      MPGS_GATEWAY_URL: sim.url,
      MPGS_MERCHANT_ID: MERCHANT,
      MPGS_API_PASSWORD: 'sim-api-password',
      MPGS_NOTIFICATION_SECRET: SECRET,
      MPGS_TIMEOUT_MS: '5000',
      TRUSTED_PROXIES: '1',
      ASK_INTERVAL_MS: '200',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    // the report's times are the service's: the test moves the service's clock
    clockOf.now = () => env.clock.now();
    for (const entry of [
      'workers/card-charge/index.ts',
      'workers/callback-reconciler/index.ts',
      'workers/refund/index.ts',
    ])
      processes.push(await env.spawn(entry));
    shop = await env.merchant({
      environment: 'live',
      scope: 'full',
      merchant: { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } } },
    });

    // a day of card payments: each discrepancy once, beside operations that agree
    ids.matched = await paid();
    ids.reversed = await paid();
    ids.amount = await paid();
    ids.omitted = await paid();
    // an operator's partial refund of the payment that agrees
    const refund = await env.admin(
      'POST',
      `/admin/payments/${ids.matched}/refunds`,
      { amount: 1_000, reason: 'one bag returned' },
      { 'Idempotency-Key': randomUUID() },
    );
    expect(refund.status, JSON.stringify(refund.body)).to.equal(201);
    ids.refund = refund.body.id;
    const done = await eventually(
      async () => {
        const row = await env.services.db('refunds').where({ id: ids.refund }).first();
        return row && row.status !== 'pending' && row.status !== 'processing' ? row : undefined;
      },
      30_000,
      100,
    );
    expect(done.status).to.equal('succeeded');
    expect(sim.transactions().filter((t) => t.orderId === ids.matched && t.type === 'REFUND')).to.have.length(1);

    sim.finances.reverse(ids.reversed); // a chargeback after the payment completed
    sim.finances.setAmount(ids.amount, 2_400);
    sim.finances.omit(ids.omitted);
    foreign = sim.finances.foreignPayment(3_000, 'USD');
    for (const p of processes) await p.kill();
    day = businessDay(env.clock.now(), TZ);
    env.clock.advance(dayBounds(day, TZ).end + LAG_MS + 60_000 - env.clock.now());
    const { start, end } = dayBounds(day, TZ);
    report = sim.finances.report({ from: start, to: end });
  });
  after(async () => {
    await env?.close();
    await sim?.close();
  });

  it('writes the report in the columns the mpgs-csv parser reads', () => {
    const lines = report.trimEnd().split('\n');
    expect(lines[0]).to.equal('Order ID,Transaction ID,Transaction Type,Result,Amount,Currency,Date');
    const rows = lines.slice(1).map((l) => l.split(','));
    // four payments, one omitted; the refund; the chargeback; the foreign payment
    expect(rows.map((r) => `${r[0]} ${r[2]}`).sort()).to.deep.equal(
      [
        `${ids.matched} PAYMENT`,
        `${ids.matched} REFUND`,
        `${ids.reversed} PAYMENT`,
        `${ids.reversed} CHARGEBACK`,
        `${ids.amount} PAYMENT`,
        `${foreign} PAYMENT`,
      ].sort(),
    );
    expect(rows.find((r) => r[2] === 'REFUND')).to.include.members([ids.refund, 'SUCCESS', '10.00', 'USD']);
    expect(rows.find((r) => r[0] === ids.amount)).to.include.members(['pay-1', '24.00']);
    expect(report.endsWith('\n')).to.equal(true);
  });

  it('refuses a period that is not a day, storing nothing', async () => {
    const statements = await count('provider_statements');
    for (const [query, param] of [
      ['&from=2026-13-01', 'from'],
      [`&to=${day}`, 'from'],
      [`&from=${day}&to=2026-01-01`, 'to'],
    ]) {
      const res = await upload(report, query);
      expect(res.status, query).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param });
    }
    expect(await count('provider_statements')).to.equal(statements);
  });

  it('uploads the report through the admin API; the same file again changes nothing', async () => {
    const res = await upload(report);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ duplicate: false, lines: 6, inserted: 6 });
    const lines = await count('statement_lines');
    const again = await upload(report);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.include({ id: res.body.id, duplicate: true });
    expect(await count('statement_lines')).to.equal(lines);
  });

  it('puts every line and every operation of the day in exactly one category', async () => {
    const res = await env.admin('POST', '/admin/reconciliations', { connector: 'mpgs', day });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    run = res.body;
    expect(run).to.include({ connector: 'mpgs', business_day: day, status: 'done' });
    expect(run.counts).to.deep.equal({
      matched: 3, // the refunded payment, its refund, the reversed payment's own line
      'amount-mismatch': 1,
      'status-mismatch': 0,
      'missing-here': 1, // the foreign payment
      'missing-there': 1, // the omitted payment
      reversed: 1, // the chargeback
    });
    const items = async (category: string) =>
      (await env.admin('GET', `/admin/reconciliations/${run.id}/items?category=${category}`)).body.data;
    expect((await items('matched')).map((i: any) => i.object_id).sort()).to.deep.equal(
      [ids.matched, ids.refund, ids.reversed].sort(),
    );
    const amount = (await items('amount-mismatch'))[0];
    expect(amount).to.include({ object_id: ids.amount });
    expect(amount.theirs).to.include({ amount: 2_400 });
    expect((await items('missing-there'))[0]).to.include({ object_id: ids.omitted });
    const reversed = (await items('reversed'))[0];
    expect(reversed).to.include({ object_id: ids.reversed });
    expect(reversed.line).to.include({ 'Transaction Type': 'CHARGEBACK', 'Order ID': ids.reversed });
    const here = (await items('missing-here'))[0];
    expect(here.object_id).to.equal(null);
    expect(here.theirs).to.include({ amount: 3_000 });
    expect(here.line).to.include({ 'Order ID': foreign, 'Transaction Type': 'PAYMENT', Result: 'SUCCESS' });
  });

  it('reconciliation moves no money: the payments keep their status, a second run changes nothing', async () => {
    for (const k of ['reversed', 'amount', 'omitted'])
      expect((await shop.client.get(`/v1/payments/${ids[k]}`)).body.status, k).to.equal('succeeded');
    const again = await env.admin('POST', '/admin/reconciliations', { connector: 'mpgs', day });
    expect(again.status).to.equal(201);
    expect(again.body.id).to.equal(run.id);
    expect(again.body.counts).to.deep.equal(run.counts);
  });
});
