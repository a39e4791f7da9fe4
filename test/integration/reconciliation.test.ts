import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { waitFor } from '../helpers/money';
import type { RunningProcess } from '../../scripts/lib/processes';
import { startPawapaySimulator, type PawapaySimulator } from '../../scripts/simulators/pawapay/simulator';
import { businessDay, dayBounds } from '../../shared/reconciliation/days';

/**
 * Daily reconciliation of pawaPay (docs/reconciliation.md) against its simulator's statements
 * API, wallet balances and CSV download: a day of payments, a refund and a payout through the
 * service, with one of each discrepancy injected; then the run's categories, the attention
 * list, the status query that settles the open payment, the fee postings, the wallet difference,
 * and a second run that changes nothing. Then uploaded Airtel reports: loaded once, and refused
 * whole when malformed, truncated or oversized.
 */

const TOKEN = 'pawapay-recon-token';
const FEES = { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } } };
const TZ = 'Africa/Kinshasa';
const LAG_MS = 3_600_000;
const MAX_REPORT = 16_384;
const POOLS = [
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
];

describe('daily reconciliation against pawaPay statements and uploaded reports', function () {
  this.timeout(180_000);
  let sim: PawapaySimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const pools: RunningProcess[] = [];
  const ids: Record<string, string> = {};
  let foreign = '';
  let day = '';
  let run: any;
  const clockOf = { now: () => Date.now() };
  const uuid = (id: string) => id.slice(id.indexOf('_') + 1);

  const pay = async (phone: string, amount = 2_500) => {
    const res = await shop.client.post('/v1/payments', {
      amount,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone,
      reference: `rec-${Math.random().toString(36).slice(2)}`,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id as string;
  };
  const final = (path: string) =>
    waitFor(shop.client, path, (b) => !['pending', 'processing'].includes(b.status), 30_000);

  before(async () => {
    sim = await startPawapaySimulator({
      token: TOKEN,
      callbackDelayMs: 100,
      statements: { feeBps: 150 },
      now: () => clockOf.now(),
    });
    env = await startTestEnv({
      LIVE_VODACOM: 'pawapay',
      PAWAPAY_URL: sim.url,
      PAWAPAY_API_TOKEN: TOKEN,
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_WINDOW_MS: '1000',
      ASK_INTERVAL_MS: '200',
      RATE_LIMIT_PER_MINUTE: '100000',
      RECONCILIATION_CONTRACT_FEES_BPS: 'pawapay=150',
      RECONCILIATION_BALANCE_THRESHOLD: '0',
      RECONCILIATION_MAX_REPORT_BYTES: String(MAX_REPORT),
      // longer than the test may take: a run ends only because the statement callback wakes it
      RECONCILIATION_STATEMENT_POLL_MS: '600000',
    });
    sim.setCallbackUrl(`${env.baseUrl}/callbacks/pawapay`);
    // pawaPay signs by the time it is for the service: the test moves the service's clock
    clockOf.now = () => env.clock.now();
    for (const pool of POOLS) pools.push(await env.spawn(pool));
    shop = await env.merchant({ environment: 'live', scope: 'full', merchant: FEES });

    // a day of money: each discrepancy once, beside operations that agree
    ids.matched = await pay('243811234789');
    ids.lost = await pay('243811234209'); // completed at pawaPay, no callback, status queries failing
    ids.reversed = await pay('243811235789');
    ids.fee = await pay('243811236789');
    ids.amount = await pay('243811237789');
    ids.omitted = await pay('243811238789');
    for (const k of ['matched', 'reversed', 'fee', 'amount', 'omitted'])
      expect((await final(`/v1/payments/${ids[k]}`)).status, k).to.equal('succeeded');
    const refund = await shop.client.post(`/v1/payments/${ids.matched}/refund`, { amount: 500 });
    expect(refund.status, JSON.stringify(refund.body)).to.equal(201);
    ids.refund = refund.body.id;
    const payout = await shop.client.post('/v1/payouts', {
      amount: 1_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243811239789',
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
    // the lost payment's window ends, the sweep asks, pawaPay's status endpoint fails: still open
    await waitFor(
      shop.client,
      `/v1/payments/${ids.lost}`,
      () => sim.transactions().some((t) => t.id === uuid(ids.lost) && t.statusQueries > 0),
      20_000,
    );
    expect((await shop.client.get(`/v1/payments/${ids.lost}`)).body.status).to.equal('processing');
    sim.finances.reverse(uuid(ids.reversed));
    sim.finances.setFee(uuid(ids.fee), 999);
    sim.finances.setAmount(uuid(ids.amount), 2_400);
    sim.finances.omit(uuid(ids.omitted));
    foreign = sim.finances.foreignDeposit(3_000, 'USD');
    // nothing else asks pawaPay from here: the reconciliation's own status query is the one that settles
    for (const p of pools) await p.kill();
    sim.endStatusOutage();
    day = businessDay(Date.now(), TZ);
    env.clock.advance(dayBounds(day, TZ).end + LAG_MS + 60_000 - Date.now());
  });
  after(async () => {
    await env?.close();
    await sim?.close();
  });

  it('refuses a day that is not final yet', async () => {
    const res = await env.admin('POST', '/admin/reconciliations', { connector: 'pawapay', day: '2999-01-01' });
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('validation-failed');
  });

  it('puts every line and every operation of the day in exactly one category', async () => {
    const res = await env.admin('POST', '/admin/reconciliations', { connector: 'pawapay', day });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    run = res.body;
    expect(run).to.include({ connector: 'pawapay', business_day: day, status: 'done' });
    // the statement was ready before the first poll was due: its callback, verified, woke the run
    const answers = sim.finances.statementCallbacks();
    expect(answers).to.have.length.at.least(1);
    expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
    expect(run.counts).to.deep.equal({
      matched: 4, // the payment refunded, the reversed deposit's own line, the refund, the payout
      'amount-mismatch': 2, // another fee, another amount
      'status-mismatch': 1, // the lost payment
      'missing-here': 1, // the foreign deposit
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
    const here = (await items('missing-here'))[0];
    expect(here.object_id).to.equal(null);
    expect(here.theirs).to.include({ our_id: `pay_${foreign}`, amount: 3_000 });
    expect(here.line).to.include({ 'Transaction ID': foreign, Type: 'DEPOSIT' });
  });

  it('refuses a statement callback that pawaPay did not sign', async () => {
    const body = JSON.stringify({ statementId: '00000000-0000-4000-8000-000000000001', status: 'COMPLETED' });
    const res = await fetch(`${env.baseUrl}/callbacks/pawapay/statements`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).to.equal(401);
    expect(((await res.json()) as any).error.code).to.equal('signature-invalid');
  });

  it('settles the open payment through its status query, with its credit', async () => {
    const p = (await shop.client.get(`/v1/payments/${ids.lost}`)).body;
    expect(p.status).to.equal('succeeded');
    const credits = await env.services
      .db('ledger_transactions')
      .where({ reference_id: ids.lost, kind: 'payment_credit' });
    expect(credits).to.have.length(1);
  });

  it('lists each open mismatch in /admin/attention with the line beside our row', async () => {
    const res = await env.admin('GET', '/admin/attention');
    expect(res.status).to.equal(200);
    const recon = res.body.data.filter((a: any) => String(a.reason).startsWith('reconciliation-'));
    expect(recon.map((a: any) => a.reason).sort()).to.deep.equal([
      'reconciliation-amount-mismatch',
      'reconciliation-amount-mismatch',
      'reconciliation-missing-here',
      'reconciliation-missing-there',
      'reconciliation-reversed',
    ]);
    const fee = recon.find((a: any) => a.id === ids.fee);
    expect(fee.ours).to.include({ status: 'succeeded', amount: 2_500, currency: 'USD' });
    expect(fee.theirs).to.include({ amount: 2_500, fee: 999 });
    expect(fee.line).to.include({ Fee: '9.99', Type: 'DEPOSIT' });
  });

  it('posts each provider fee once, to the connector accounts, balanced', async () => {
    const fees = await env.services.db('ledger_transactions').where({ kind: 'provider_fee' });
    // five deposits that completed there and the foreign one, the refund and the payout: the reversal has none
    expect(fees).to.have.length(8);
    const [{ sum }] = await env.services.db
      .raw(
        `select sum(e.amount)::int as sum from ledger_entries e join ledger_accounts a on a.id = e.account_id
        where a.owner = 'provider:pawapay' and a.kind = 'provider_fees'`,
      )
      .then((r: any) => r.rows);
    // 38 × 3 (contract) + 999 + 36 (2,400) + 45 (3,000) + 8 (the refund of 500) + 15 (the payout of 1,000)
    expect(sum).to.equal(-(38 * 3 + 999 + 36 + 45 + 8 + 15));
    expect(run.provider_fees).to.deep.equal({ USD: 38 * 3 + 999 + 36 + 45 + 8 + 15 });
  });

  it('records the wallet difference the discrepancies leave, flagged past the threshold', async () => {
    const usd = run.balances.find((b: any) => b.currency === 'USD');
    expect(usd.source).to.equal('api');
    expect(usd.reported).to.equal(sim.finances.balance('USD'));
    // the reversal (−2,500), the amount changed (−100), the foreign deposit (+3,000), the omitted payment (−2,500)
    expect(usd.difference).to.equal(-2_500 - 100 + 3_000 - 2_500);
    expect(usd.flagged).to.equal(true);
    expect(run.balance_flagged).to.equal(true);
    const [reading] = await env.services
      .db('provider_balance_readings')
      .where({ connector: 'pawapay', currency: 'USD' });
    expect(Number(reading.difference)).to.equal(usd.difference);
  });

  it('serves the unresolved items and the wallet difference on /metrics, on closed label sets', async () => {
    const res = await fetch(`${env.baseUrl}/metrics`, {
      headers: { Authorization: 'Bearer test-admin-token-0123456789' },
    });
    expect(res.status).to.equal(200);
    const text = await res.text();
    const sample = (series: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1),
      );
    // the status mismatch was settled by its status query: resolved, no longer counted
    expect(sample('reconciliation_items{connector="pawapay",category="amount-mismatch"}')).to.equal(2);
    expect(sample('reconciliation_items{connector="pawapay",category="status-mismatch"}')).to.equal(0);
    expect(sample('reconciliation_items{connector="pawapay",category="missing-here"}')).to.equal(1);
    expect(sample('reconciliation_items{connector="airtel",category="reversed"}')).to.equal(0);
    expect(sample('reconciliation_oldest_unresolved_seconds{connector="pawapay"}')).to.be.at.least(0);
    expect(sample('provider_wallet_difference{connector="pawapay",currency="USD"}')).to.equal(
      -2_500 - 100 + 3_000 - 2_500,
    );
    expect(sample('reconciliation_balance_threshold')).to.equal(0);
    expect(text).not.to.match(/reconciliation_items\{[^}]*(pay_|stm_|rec_)/);
  });

  it('a second run changes nothing: the same items, no fee posted twice, no line twice', async () => {
    const lines = Number((await env.services.db('statement_lines').count('* as n'))[0].n);
    const again = await env.admin('POST', '/admin/reconciliations', { connector: 'pawapay', day });
    expect(again.status).to.equal(201);
    expect(again.body.id).to.equal(run.id);
    // the settled payment now agrees with the provider
    expect(again.body.counts).to.deep.equal({ ...run.counts, matched: 5, 'status-mismatch': 0 });
    expect(await env.services.db('ledger_transactions').where({ kind: 'provider_fee' })).to.have.length(8);
    expect(Number((await env.services.db('statement_lines').count('* as n'))[0].n)).to.equal(lines);
    const list = await env.admin('GET', '/admin/reconciliations?connector=pawapay');
    expect(list.body.data).to.have.length(1);
  });

  it('exports a run as CSV', async () => {
    const res = await fetch(`${env.baseUrl}/admin/reconciliations/${run.id}/items?format=csv&category=missing-there`, {
      headers: { Authorization: 'Bearer test-admin-token-0123456789' },
    });
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(text.split('\n')[0]).to.equal('id,category,object_kind,object_id,line_id,resolved,details');
    expect(text).to.include(ids.omitted);
  });

  it('an operator resolves a mismatch with a note: it leaves /admin/attention, and stays resolved when the day runs again', async () => {
    const here = (await env.admin('GET', `/admin/reconciliations/${run.id}/items?category=missing-here`)).body.data[0];
    const noNote = await env.admin('POST', `/admin/reconciliation/items/${here.id}/resolve`, { note: '  ' });
    expect(noNote.status).to.equal(400);
    expect(noNote.body.error.code).to.equal('validation-failed');
    const unknown = await env.admin('POST', '/admin/reconciliation/items/999999999/resolve', { note: 'x' });
    expect(unknown.status).to.equal(404);
    const matched = (await env.admin('GET', `/admin/reconciliations/${run.id}/items?category=matched`)).body.data[0];
    expect(
      (await env.admin('POST', `/admin/reconciliation/items/${matched.id}/resolve`, { note: 'x' })).status,
    ).to.equal(400);

    const res = await env.admin('POST', `/admin/reconciliation/items/${here.id}/resolve`, {
      note: 'a test deposit made from the pawaPay dashboard',
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({
      id: here.id,
      category: 'missing-here',
      resolved: true,
      resolution_note: 'a test deposit made from the pawaPay dashboard',
      reconciliation: run.id,
    });
    // again: the first note stands
    const again = await env.admin('POST', `/admin/reconciliation/items/${here.id}/resolve`, { note: 'other' });
    expect(again.status).to.equal(200);
    expect(again.body.resolution_note).to.equal('a test deposit made from the pawaPay dashboard');

    const reasons = async () =>
      (await env.admin('GET', '/admin/attention')).body.data
        .map((a: any) => a.reason)
        .filter((r: string) => r.startsWith('reconciliation-'))
        .sort();
    expect(await reasons()).to.deep.equal([
      'reconciliation-amount-mismatch',
      'reconciliation-amount-mismatch',
      'reconciliation-missing-there',
      'reconciliation-reversed',
    ]);
    // the day again: its items replaced, the resolution kept
    const rerun = await env.admin('POST', '/admin/reconciliations', { connector: 'pawapay', day });
    expect(rerun.status).to.equal(201);
    const [item] = (await env.admin('GET', `/admin/reconciliations/${run.id}/items?category=missing-here`)).body.data;
    expect(item).to.include({ resolved: true, resolution_note: 'a test deposit made from the pawaPay dashboard' });
    expect(await reasons()).to.have.length(4);
  });

  describe('an uploaded Airtel report', () => {
    const report = (rows: string[], total?: string) =>
      [
        'Date,Transaction ID,Airtel Money ID,Type,Status,Amount,Currency,Fee,MSISDN',
        ...rows,
        ...(total ? [total] : []),
      ].join('\n') + '\n';
    const row = (n: number) =>
      `${day} 10:00:0${n % 10},P${'a'.repeat(31)}${n % 10},MP${1000 + n},COLLECTION,TS,25.00,USD,0.25,0971234567`;
    const upload = (body: string, query = 'connector=airtel') =>
      env.admin('POST', `/admin/reconciliation/statements?${query}`, body, { 'Content-Type': 'text/csv' });
    const counts = async () => ({
      statements: Number(
        (await env.services.db('provider_statements').where({ connector: 'airtel' }).count('* as n'))[0].n,
      ),
      lines: Number((await env.services.db('statement_lines').where({ connector: 'airtel' }).count('* as n'))[0].n),
    });

    it('is loaded once: the same file again changes nothing', async () => {
      const body = report([row(1), row(2)], 'TOTAL,2,1000.00,USD');
      const first = await upload(body);
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(first.body).to.include({ duplicate: false, lines: 2, inserted: 2 });
      const second = await upload(body);
      expect(second.status).to.equal(200);
      expect(second.body).to.include({ id: first.body.id, duplicate: true });
      expect(await counts()).to.deep.equal({ statements: 1, lines: 2 });
      const [s] = await env.services.db('provider_statements').where({ id: first.body.id });
      expect(Number(s.closing_balance)).to.equal(100_000);
    });

    it('malformed, truncated or oversized: a clear 4xx and nothing applied', async () => {
      const before = await counts();
      const malformed = await upload(
        report([row(3), `${day} 10:00:00,P1,MP9,COLLECTION,TS,abc,USD,0,097`], 'TOTAL,2,,'),
      );
      expect(malformed.status).to.equal(400);
      expect(malformed.body.error).to.include({ code: 'validation-failed', param: 'body' });
      expect(malformed.body.error.message).to.match(/line 3: amount "abc"/);
      const truncated = await upload(report([row(4), row(5)]));
      expect(truncated.status).to.equal(400);
      expect(truncated.body.error.message).to.match(/TOTAL row \(truncated\)/);
      const cut = await upload(report([row(6)]).slice(0, -20));
      expect(cut.status).to.equal(400);
      const rows = Array.from({ length: 200 }, (_, i) => row(i + 10));
      const oversized = await upload(report(rows, `TOTAL,${rows.length},,`));
      expect(oversized.status).to.equal(413);
      expect(oversized.body.error.code).to.equal('payload-too-large');
      const unknown = await upload(report([row(7)], 'TOTAL,1,,'), 'connector=nobody');
      expect(unknown.status).to.equal(400);
      expect(unknown.body.error.param).to.equal('connector');
      expect(await counts()).to.deep.equal(before);
    });
  });
});
