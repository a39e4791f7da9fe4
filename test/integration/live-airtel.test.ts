import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { POOLS, startMoneyEnv, waitFor } from '../helpers/money';
import type { RunningProcess } from '../../scripts/lib/processes';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { startAirtelSimulator, type AirtelSimulator } from '../../scripts/simulators/airtel/simulator';
import { callbackHash } from '../../shared/providers/airtel/callbackHash';

/**
 * Live keys through the Airtel Money Open API connector, end to end against its simulator
 * (scripts/simulators/airtel/simulator.ts) over real HTTP: the web routes the payment to the
 * connector, the pools push, refund and pay out through it, the simulator calls back with its
 * hash, and the sweep asks its enquiry endpoint. The simulator validates every request against
 * the JSON Schemas written from Airtel's reference; a request it refused fails the file.
 */
describe('live keys through the Airtel connector (simulator)', function () {
  this.timeout(120_000);
  const HASH_SECRET = 'airtel-callback-hash-secret';
  let sim: AirtelSimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  let pusher: RunningProcess;
  const PUSH = 'workers/provider-push/index.ts';

  const payment = (phone: string, over: Record<string, unknown> = {}) => ({
    amount: 2_500,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'airtel',
    phone: `243${phone}`,
    reference: `live-${randomUUID()}`,
    ...over,
  });
  const final = (path: string, timeoutMs = 30_000) =>
    waitFor(shop.client, path, (b) => !['pending', 'processing'].includes(b.status), timeoutMs);
  // our id as Airtel's transaction.id: P, R or O and the UUID's hex digits (shared/providers/airtel/README.md)
  const TX_PREFIX: Record<string, string> = { pay: 'P', re: 'R', po: 'O' };
  const simTx = (ourId: string) =>
    sim
      .transactions()
      .filter(
        (t) =>
          t.id ===
          `${TX_PREFIX[ourId.slice(0, ourId.indexOf('_'))]}${ourId.slice(ourId.indexOf('_') + 1).replace(/-/g, '')}`,
      );

  before(async () => {
    sim = await startAirtelSimulator({
      callbackHashSecret: HASH_SECRET,
      finalAfterMs: 300,
      callbackDelayMs: 100,
      slowInitiationMs: 4_000,
      pin: '2468',
    });
    env = await startMoneyEnv(
      {
        LIVE_AIRTEL: 'airtel',
        AIRTEL_URL: sim.url,
        AIRTEL_CLIENT_ID: 'sim-client-id',
        AIRTEL_CLIENT_SECRET: 'sim-client-secret',
        AIRTEL_CALLBACK_HASH_SECRET: HASH_SECRET,
        AIRTEL_DISBURSEMENT_PIN: '2468',
        AIRTEL_PIN_PUBLIC_KEY: sim.publicKeyPem,
        // Airtel sends no refund or payout callback: the sweep asks its enquiry endpoint once the window is over
        PROVIDER_WINDOW_MS: '1500',
        ASK_INTERVAL_MS: '300',
        PAYMENT_JOB_LOCK_MS: '1500',
      },
      POOLS.filter((p) => p !== PUSH),
    );
    pusher = await env.spawn(PUSH);
    sim.setCallbackUrl(`${env.baseUrl}/callbacks/airtel`);
    shop = await env.merchant({
      environment: 'live',
      scope: 'full',
      merchant: { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } } },
    });
  });
  after(async () => {
    await env?.close();
    await sim?.close();
    // every request the connector sent conformed to the schemas written from Airtel's reference
    expect(sim.requests().filter((r) => r.problems.length > 0)).to.deep.equal([]);
  });

  it('a live payment goes to Airtel and succeeds by its hashed callback, with the airtel_money_id as provider_ref and its event', async () => {
    const res = await shop.client.post('/v1/payments', payment('970000001'));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ provider: 'airtel', environment: 'live', status: 'processing' });
    const done = await final(`/v1/payments/${res.body.id}`);
    const [tx] = simTx(res.body.id);
    expect(done).to.include({ status: 'succeeded', provider_ref: tx.airtelMoneyId, amount_charged: 2_500 });
    expect(tx).to.include({ status: 'TS', amount: '25', currency: 'USD', msisdn: '970000001', initiations: 1 });
    const events = await shop.client.get(`/v1/events?type=payment.succeeded`);
    expect(events.body.data.map((e: any) => e.data.object.id)).to.include(res.body.id);
  });

  it('a failed transaction fails the payment: its callback carries no code (provider-failed), its enquiry the mapped one', async () => {
    const res = await shop.client.post('/v1/payments', payment('970000002'));
    const done = await final(`/v1/payments/${res.body.id}`);
    expect(done).to.include({ status: 'failed', failure_code: 'provider-failed' });
    expect(simTx(res.body.id)[0]).to.include({ status: 'TF', responseCode: 'DP00800001007' });
  });

  it('a partial refund is 422 partial-refund-not-supported and writes nothing; a full one is refunded through Airtel', async () => {
    const paid = await final(
      `/v1/payments/${(await shop.client.post('/v1/payments', payment('970000001', { amount: 4_000 }))).body.id}`,
    );
    expect(paid.status).to.equal('succeeded');
    const partial = await shop.client.post(`/v1/payments/${paid.id}/refund`, { amount: 1_000 });
    expect(partial.status).to.equal(422);
    expect(partial.body.error).to.include({ code: 'partial-refund-not-supported', param: 'amount' });
    expect(await env.services.db('refunds').where({ payment_id: paid.id })).to.have.length(0);
    const full = await shop.client.post(`/v1/payments/${paid.id}/refund`, {});
    expect(full.status, JSON.stringify(full.body)).to.equal(201);
    const refunds = await eventually(async () => {
      const list = (await shop.client.get(`/v1/payments/${paid.id}/refunds`)).body.data;
      return list[0]?.status === 'succeeded' && list;
    }, 30_000);
    expect(refunds[0]).to.include({ amount: 4_000, status: 'succeeded' });
    expect(simTx(paid.id)[0]).to.include({ refunded: true, refundRequests: 1 });
    expect((await shop.client.get(`/v1/payments/${paid.id}`)).body).to.include({
      status: 'refunded',
      amount_refunded: 4_000,
    });
  });

  it('a payout is disbursed with the encrypted PIN and succeeds', async () => {
    await final(
      `/v1/payments/${(await shop.client.post('/v1/payments', payment('970000001', { amount: 9_000 }))).body.id}`,
    );
    const res = await shop.client.post('/v1/payouts', {
      amount: 3_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: '243970000001',
      reference: `po-${randomUUID()}`,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const done = await waitFor(
      shop.client,
      `/v1/payouts/${res.body.id}`,
      (b) => b.status === 'succeeded' || b.status === 'failed',
      30_000,
    );
    expect(done.status).to.equal('succeeded');
    expect(simTx(res.body.id)[0]).to.include({ kind: 'disbursement', status: 'TS', amount: '30' });
  });

  it('a pending enquiry with airtel_money_id null keeps a payment and a payout open: each posted once, then succeeded', async () => {
    // 970000023: the initiation answers 500 though Airtel made the transaction; two enquiries
    // answer TA (ambiguous) with airtel_money_id null, the third TS
    const res = await shop.client.post('/v1/payments', payment('970000023', { amount: 6_000 }));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const done = await final(`/v1/payments/${res.body.id}`);
    const [tx] = simTx(res.body.id);
    expect(done).to.include({ status: 'succeeded', provider_ref: tx.airtelMoneyId });
    expect(tx, 'collection POSTs Airtel received').to.include({ initiations: 1, status: 'TS' });

    const po = await shop.client.post('/v1/payouts', {
      amount: 2_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'airtel',
      phone: '243970000023',
      reference: `po-${randomUUID()}`,
    });
    expect(po.status, JSON.stringify(po.body)).to.equal(201);
    const paid = await waitFor(
      shop.client,
      `/v1/payouts/${po.body.id}`,
      (b) => b.status === 'succeeded' || b.status === 'failed',
      30_000,
    );
    expect(paid.status).to.equal('succeeded');
    expect(simTx(po.body.id)[0], 'disbursement POSTs Airtel received').to.include({ initiations: 1, status: 'TS' });
  });

  it('an amount Airtel cannot carry is 422 amount-not-supported before any request leaves', async () => {
    const before = sim.requests().length;
    const res = await shop.client.post('/v1/payments', payment('970000001', { amount: 5 }));
    expect(res.status).to.equal(422);
    expect(res.body.error).to.include({ code: 'amount-not-supported', param: 'amount' });
    expect(res.body.error.message).to.match(/below its minimum of 0\.1 USD/);
    expect(sim.requests().length).to.equal(before);
  });

  it('an operator with no live connector: 422 operator-unavailable, and closed in /v1/availability', async () => {
    const res = await shop.client.post('/v1/payments', payment('810000001', { operator: 'vodacom' }));
    expect(res.status).to.equal(422);
    expect(res.body.error.code).to.equal('operator-unavailable');
    const rows = (await shop.client.get('/v1/availability')).body.data;
    expect(rows.find((r: any) => r.operator === 'vodacom')).to.deep.equal({
      operator: 'vodacom',
      collection: 'closed',
      payout: 'closed',
      refund: 'closed',
    });
    expect(rows.find((r: any) => r.operator === 'africell')).to.deep.equal({
      operator: 'africell',
      collection: 'closed',
      payout: 'closed',
      refund: 'closed',
    });
    expect(rows.find((r: any) => r.operator === 'airtel').collection).to.not.equal('closed');
  });

  it('forged, altered and unhashed callbacks get 401 and change nothing', async () => {
    const res = await shop.client.post('/v1/payments', payment('970000020'));
    const id = res.body.id as string;
    const txId = `P${id.slice(4).replace(/-/g, '')}`;
    const body = (hash?: string) =>
      JSON.stringify({
        transaction: { id: txId, message: 'paid', status_code: 'TS', airtel_money_id: 'MP-FORGED' },
        ...(hash ? { hash } : {}),
      });
    const send = (raw: string) =>
      fetch(`${env.baseUrl}/callbacks/airtel`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: raw,
      });
    const stored = async () => (await env.services.db('provider_callbacks').where({ object_id: id })).length;
    const before = await stored();
    const genuine = JSON.parse(body(callbackHash(HASH_SECRET, JSON.parse(body()), 'request')));
    for (const raw of [
      body('bm90LXRoZS1oYXNo'),
      body(),
      JSON.stringify({ ...genuine, transaction: { ...genuine.transaction, status_code: 'TF' } }),
      body(callbackHash('guessed', JSON.parse(body()), 'request')),
    ]) {
      expect((await send(raw)).status, raw).to.equal(401);
    }
    expect(await stored()).to.equal(before);
    expect((await shop.client.get(`/v1/payments/${id}`)).body.status).to.equal('processing');
  });

  it('a worker killed while Airtel holds the push: one initiation charged, found again by the enquiry, succeeded once', async () => {
    const res = await shop.client.post('/v1/payments', payment('970000041'));
    // the simulator answers this number after 4 s: the only pusher dies while it holds the request
    await eventually(async () => simTx(res.body.id).length === 1, 10_000, 20);
    await pusher.kill();
    pusher = await env.spawn(PUSH);
    const done = await final(`/v1/payments/${res.body.id}`, 60_000);
    expect(done.status).to.equal('succeeded');
    const [tx] = simTx(res.body.id);
    expect(tx.status).to.equal('TS');
    expect(tx.initiations, 'the resend was refused as a duplicate, or never sent').to.be.at.most(2);
    const credits = await env.services.db('ledger_transactions').where({ reference_id: res.body.id });
    expect(credits, 'one credit').to.have.length(1);
  });
});
