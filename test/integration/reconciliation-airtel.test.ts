import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { POOLS, waitFor } from '../helpers/money';
import type { RunningProcess } from '../../scripts/lib/processes';
import { startAirtelSimulator, type AirtelSimulator } from '../../scripts/simulators/airtel/simulator';
import { businessDay, dayBounds } from '../../shared/reconciliation/days';

/**
 * Daily reconciliation of Airtel Money (docs/reconciliation.md) from an uploaded report: a day of
 * payments, a full refund and a payout through the live Airtel connector against its simulator,
 * with one of each discrepancy injected on the report the simulator writes
 * (scripts/simulators/airtel/report.ts); the report uploaded through the admin API, the day run,
 * and each category checked, with the status query that settles the lost payment.
 */

const TZ = 'Africa/Kinshasa';
const LAG_MS = 3_600_000;
const PIN = '2468';

describe('daily reconciliation of Airtel against its uploaded report', function () {
  this.timeout(180_000);
  let sim: AirtelSimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const pools: RunningProcess[] = [];
  const ids: Record<string, string> = {};
  let foreign = '';
  let day = '';
  let run: any;
  const clockOf = { now: () => Date.now() };
  // our id as Airtel's transaction.id (shared/providers/airtel/README.md): P, R or O and the UUID's hex digits
  const airtelId = (id: string) =>
    `${{ pay: 'P', re: 'R', po: 'O' }[id.slice(0, id.indexOf('_'))]}${id.slice(id.indexOf('_') + 1).replace(/-/g, '')}`;

  const pay = async (phone: string, amount = 2_500) => {
    const res = await shop.client.post('/v1/payments', {
      amount,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: `243${phone}`,
      reference: `rec-${Math.random().toString(36).slice(2)}`,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id as string;
  };
  const final = (path: string) =>
    waitFor(shop.client, path, (b) => !['pending', 'processing'].includes(b.status), 30_000);

  before(async () => {
    sim = await startAirtelSimulator({
      finalAfterMs: 300,
      callbackDelayMs: 100,
      pin: PIN,
      feeBps: 150,
      now: () => clockOf.now(),
    });
    env = await startTestEnv({
      LIVE_AIRTEL: 'airtel',
      AIRTEL_URL: sim.url,
      AIRTEL_CLIENT_ID: 'sim-client-id',
      AIRTEL_CLIENT_SECRET: 'sim-client-secret',
      AIRTEL_DISBURSEMENT_PIN: PIN,
      AIRTEL_PIN_PUBLIC_KEY: sim.publicKeyPem,
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_WINDOW_MS: '1500',
      ASK_INTERVAL_MS: '300',
      RATE_LIMIT_PER_MINUTE: '100000',
      RECONCILIATION_CONTRACT_FEES_BPS: 'airtel=150',
      RECONCILIATION_BALANCE_THRESHOLD: '0',
    });
    sim.setCallbackUrl(`${env.baseUrl}/callbacks/airtel`);
    // the report's times are the service's: the test moves the service's clock
    clockOf.now = () => env.clock.now();
    for (const pool of POOLS) pools.push(await env.spawn(pool));
    shop = await env.merchant({
      environment: 'live',
      scope: 'full',
      merchant: { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } } },
    });

    // a day of money: each discrepancy once, beside operations that agree
    ids.matched = await pay('970000001');
    ids.lost = await pay('970000050'); // completed at Airtel, no callback, enquiries failing
    ids.reversed = await pay('970000001');
    ids.fee = await pay('970000001');
    ids.amount = await pay('970000001');
    ids.omitted = await pay('970000001');
    for (const k of ['matched', 'reversed', 'fee', 'amount', 'omitted'])
      expect((await final(`/v1/payments/${ids[k]}`)).status, k).to.equal('succeeded');
    // Airtel refunds in full only
    const refund = await shop.client.post(`/v1/payments/${ids.matched}/refund`, {});
    expect(refund.status, JSON.stringify(refund.body)).to.equal(201);
    ids.refund = refund.body.id;
    const payout = await shop.client.post('/v1/payouts', {
      amount: 1_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: '243970000001',
      reference: 'rec-payout',
    });
    expect(payout.status, JSON.stringify(payout.body)).to.equal(201);
    ids.payout = payout.body.id;
    const refunds = await waitFor(
      shop.client,
      `/v1/payments/${ids.matched}/refunds`,
      (b) => b.data.length > 0 && b.data.every((r: any) => !['pending', 'processing'].includes(r.status)),
      30_000,
    );
    expect(refunds.data[0].status).to.equal('succeeded');
    expect((await final(`/v1/payouts/${ids.payout}`)).status).to.equal('succeeded');
    // the lost payment's window ends, the sweep asks, Airtel's enquiry fails: still open
    await waitFor(
      shop.client,
      `/v1/payments/${ids.lost}`,
      () => sim.transactions().some((t) => t.id === airtelId(ids.lost) && t.enquiries > 0),
      20_000,
    );
    expect((await shop.client.get(`/v1/payments/${ids.lost}`)).body.status).to.equal('processing');
    sim.finances.reverse(airtelId(ids.reversed));
    sim.finances.setFee(airtelId(ids.fee), 999);
    sim.finances.setAmount(airtelId(ids.amount), 2_400);
    sim.finances.omit(airtelId(ids.omitted));
    foreign = sim.finances.foreignCollection(3_000, 'USD');
    // nothing else asks Airtel from here: the reconciliation's own enquiry is the one that settles
    for (const p of pools) await p.kill();
    sim.endEnquiryOutage();
    day = businessDay(env.clock.now(), TZ);
    env.clock.advance(dayBounds(day, TZ).end + LAG_MS + 60_000 - env.clock.now());
  });
  after(async () => {
    await env?.close();
    await sim?.close();
    // every request the connector sent conformed to the schemas written from Airtel's reference
    expect(sim.requests().filter((r) => r.problems.length > 0)).to.deep.equal([]);
  });

  it('the report the simulator writes is uploaded through the admin API, once', async () => {
    const { start, end } = dayBounds(day, TZ);
    const report = sim.finances.report('USD', { from: start, to: end });
    const upload = () =>
      env.admin('POST', '/admin/reconciliation/statements?connector=airtel', report, { 'Content-Type': 'text/csv' });
    const res = await upload();
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    // 6 payments completed (one omitted, one foreign), a refund, a payout, a reversal
    expect(res.body).to.include({ duplicate: false, lines: 9, inserted: 9 });
    const again = await upload();
    expect(again.status).to.equal(200);
    expect(again.body).to.include({ id: res.body.id, duplicate: true });
  });

  it('puts every line and every operation of the day in exactly one category', async () => {
    const res = await env.admin('POST', '/admin/reconciliations', { connector: 'airtel', day });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    run = res.body;
    expect(run).to.include({ connector: 'airtel', business_day: day, status: 'done' });
    expect(run.counts).to.deep.equal({
      matched: 4, // the payment refunded, its refund, the reversed payment's own line, the payout
      'amount-mismatch': 2, // another fee, another amount
      'status-mismatch': 1, // the lost payment
      'missing-here': 1, // the foreign collection
      'missing-there': 1, // the omitted payment
      reversed: 1,
    });
    const items = async (category: string) =>
      (await env.admin('GET', `/admin/reconciliations/${run.id}/items?category=${category}`)).body.data;
    expect((await items('amount-mismatch')).map((i: any) => i.object_id).sort()).to.deep.equal(
      [ids.amount, ids.fee].sort(),
    );
    expect((await items('status-mismatch'))[0]).to.include({ object_id: ids.lost, resolved: true });
    expect((await items('missing-there'))[0]).to.include({ object_id: ids.omitted });
    expect((await items('reversed'))[0]).to.include({ object_id: ids.reversed });
    expect((await items('matched')).map((i: any) => i.object_id).sort()).to.deep.equal(
      [ids.matched, ids.refund, ids.reversed, ids.payout].sort(),
    );
    const here = (await items('missing-here'))[0];
    expect(here.object_id).to.equal(null);
    expect(here.theirs).to.include({ amount: 3_000 });
    expect(here.line).to.include({ 'Transaction ID': foreign, Type: 'COLLECTION', Status: 'TS' });
  });

  it('settles the lost payment through its enquiry, with its credit', async () => {
    expect((await shop.client.get(`/v1/payments/${ids.lost}`)).body.status).to.equal('succeeded');
    const credits = await env.services
      .db('ledger_transactions')
      .where({ reference_id: ids.lost, kind: 'payment_credit' });
    expect(credits).to.have.length(1);
  });

  it("posts each line's provider fee once and compares the report's closing balance with the ledger", async () => {
    // five payments completed there and the foreign one, the refund and the payout: the reversal has none
    const fees = await env.services.db('ledger_transactions').where({ kind: 'provider_fee' });
    expect(fees).to.have.length(8);
    // 38 × 4 (contract: the refunded payment, the lost one, the reversed one, the refund) + 999 + 36 (2,400) + 45 (3,000) + 15 (the payout of 1,000)
    expect(run.provider_fees).to.deep.equal({ USD: 38 * 4 + 999 + 36 + 45 + 15 });
    const usd = run.balances.find((b: any) => b.currency === 'USD');
    expect(usd.reported).to.equal(sim.finances.balance('USD'));
    // the reversal (−2,500), the amount changed (−100), the foreign collection (+3,000), the omitted payment (−2,500)
    expect(usd.difference).to.equal(-2_500 - 100 + 3_000 - 2_500);
    expect(usd.flagged).to.equal(true);
  });

  it('a second run changes nothing: the settled payment now agrees', async () => {
    const again = await env.admin('POST', '/admin/reconciliations', { connector: 'airtel', day });
    expect(again.status).to.equal(201);
    expect(again.body.id).to.equal(run.id);
    expect(again.body.counts).to.deep.equal({ ...run.counts, matched: 5, 'status-mismatch': 0 });
    expect(await env.services.db('ledger_transactions').where({ kind: 'provider_fee' })).to.have.length(8);
  });
});
