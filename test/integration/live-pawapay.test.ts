import { expect } from 'chai';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMoneyEnv, waitFor } from '../helpers/money';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { startPawapaySimulator, type PawapaySimulator } from '../../scripts/simulators/pawapay/simulator';
import { contentDigest, signMessage } from '../../shared/providers/pawapay/signatures';

/**
 * Live keys through the pawaPay Merchant API v2 connector, end to end against its simulator
 * (scripts/simulators/pawapay/simulator.ts, test numbers in its README) over real HTTP: routing
 * (vodacom and orange to pawaPay), every scenario of the simulator, RFC 9421 callbacks verified
 * with the published keys, and, with an account that signs nothing, callbacks confirmed by a
 * status query. The simulator validates every request with the connector's own JSON Schemas.
 */

const TOKEN = 'pawapay-test-token';
const FEES = { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } } };

interface Captured {
  headers: Record<string, string>;
  body: string;
}

/** A server the simulator calls back instead of the service, to keep a genuine signed callback. */
async function captureServer() {
  const captured: Captured[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const kept = ['content-type', 'content-digest', 'signature-date', 'signature-input', 'signature'];
      captured.push({
        headers: Object.fromEntries(kept.filter((k) => req.headers[k]).map((k) => [k, String(req.headers[k])])),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks/pawapay`,
    captured,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const mm = (operator: string, phone: string, over: Record<string, unknown> = {}) => ({
  amount: 2_500,
  currency: 'USD',
  method: 'mobile_money',
  operator,
  phone,
  reference: `live-${randomUUID()}`,
  ...over,
});

describe('live keys through the pawaPay connector (simulator), signed callbacks', function () {
  this.timeout(120_000);
  let sim: PawapaySimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const final = (id: string, timeoutMs = 30_000) =>
    waitFor(shop.client, `/v1/payments/${id}`, (b) => !['pending', 'processing'].includes(b.status), timeoutMs);
  const simTx = (ourId: string) => sim.transactions().filter((t) => t.id === ourId.slice(ourId.indexOf('_') + 1));
  const credits = async (id: string) =>
    (await env.services.db('ledger_transactions').where({ reference_id: id })).length;
  const pay = async (operator: string, phone: string, over: Record<string, unknown> = {}) => {
    const res = await shop.client.post('/v1/payments', mm(operator, phone, over));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  };

  before(async () => {
    sim = await startPawapaySimulator({
      token: TOKEN,
      callbackDelayMs: 100,
      reconciliationMs: 500,
      slowInitiationMs: 2_500,
    });
    env = await startMoneyEnv({
      LIVE_VODACOM: 'pawapay',
      LIVE_ORANGE: 'pawapay',
      PAWAPAY_URL: sim.url,
      PAWAPAY_API_TOKEN: TOKEN,
      // a push answered after 2.5 s has timed out: the connector asks its status
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_WINDOW_MS: '2000',
      ASK_INTERVAL_MS: '300',
    });
    sim.setCallbackUrl(`${env.baseUrl}/callbacks/pawapay`);
    shop = await env.merchant({ environment: 'live', scope: 'full', merchant: FEES });
  });
  after(async () => {
    await env?.close();
    await sim?.close();
    // the only refusals are the simulated 500s of scenarios 204 and 207
    const { UNKNOWN_ERROR: _simulated, ...refused } = sim.refusals();
    expect(refused, 'every request the connector sent passed the schemas').to.deep.equal({});
  });

  it('a live vodacom payment is a pawaPay deposit: succeeded by its signed callback, with its event and one credit', async () => {
    const p = await pay('vodacom', '243811234789');
    expect(p).to.include({ provider: 'pawapay', environment: 'live', status: 'processing' });
    const done = await final(p.id);
    expect(done).to.include({ status: 'succeeded', provider_ref: p.id.slice(4) });
    expect(simTx(p.id)[0]).to.include({
      kind: 'deposit',
      provider: 'VODACOM_MPESA_COD',
      amount: '25',
      currency: 'USD',
      status: 'COMPLETED',
      initiations: 1,
      phoneNumber: '243811234789',
    });
    expect(await credits(p.id)).to.equal(1);
    const [cb] = await env.services.db('provider_callbacks').where({ object_id: p.id });
    expect(cb).to.include({
      provider: 'pawapay',
      verified: true,
      reported_status: 'succeeded',
      outcome: 'applied',
      currency: 'USD',
    });
    expect(Number(cb.amount)).to.equal(2_500);
  });

  it('pawaPay failure codes fail payments with ours', async () => {
    const cases: [string, string][] = [
      ['243811234049', 'insufficient-funds'],
      ['243811234029', 'payer-not-found'],
    ];
    for (const [phone, code] of cases) {
      const done = await final((await pay('vodacom', phone)).id);
      expect(done, phone).to.include({ status: 'failed', failure_code: code });
    }
  });

  it('IN_RECONCILIATION stays open, then succeeds; a callback sent twice and one out of order are applied once', async () => {
    for (const tail of ['201', '202', '203']) {
      const p = await pay('orange', `243891234${tail}`);
      expect((await final(p.id)).status, tail).to.equal('succeeded');
      expect(await credits(p.id), tail).to.equal(1);
    }
    const twice = await pay('vodacom', '243811234202');
    await final(twice.id);
    const outcomes = await eventually(async () => {
      const rows = await env.services.db('provider_callbacks').where({ object_id: twice.id }).pluck('outcome');
      return rows.length === 2 && rows.every(Boolean) && rows.sort();
    });
    expect(outcomes).to.deep.equal(['applied', 'duplicate']);
  });

  it('unknown outcomes never fail: a 500 that created the deposit, a late answer, a 500 that did not; one deposit each', async () => {
    for (const tail of ['204', '205', '207']) {
      const p = await pay('vodacom', `243811234${tail}`);
      expect((await final(p.id)).status, tail).to.equal('succeeded');
      expect(simTx(p.id), tail).to.have.length(1);
      expect(await credits(p.id), tail).to.equal(1);
    }
  });

  it('no callback until asked: the sweep asks the status endpoint and succeeds it', async () => {
    const p = await pay('vodacom', '243811234206');
    expect((await final(p.id)).status).to.equal('succeeded');
    expect(simTx(p.id)[0].statusQueries).to.be.at.least(1);
  });

  it('a callback naming another amount is recorded as amount-mismatch and listed, never applied; the status query decides', async () => {
    const p = await pay('vodacom', '243811234208');
    const cb = await eventually(
      async () =>
        (await env.services.db('provider_callbacks').where({ object_id: p.id, outcome: 'amount-mismatch' }))[0],
    );
    expect(Number(cb.amount)).to.equal(25_000);
    const attention = await env.admin('GET', '/admin/attention');
    expect(attention.body.data.filter((i: any) => i.id === p.id).map((i: any) => i.reason)).to.deep.equal([
      'amount-mismatch',
    ]);
    // the provider's status answer (the amount charged) decides at the window's end
    expect((await final(p.id)).status).to.equal('succeeded');
    expect(await credits(p.id)).to.equal(1);
  });

  it('partial and full refunds and a payout go through pawaPay', async () => {
    const p = await pay('vodacom', '243811234789', { amount: 6_000 });
    await final(p.id);
    expect((await shop.client.post(`/v1/payments/${p.id}/refund`, { amount: 1_000 })).status).to.equal(201);
    expect((await shop.client.post(`/v1/payments/${p.id}/refund`, {})).status).to.equal(201);
    const refunds = await eventually(async () => {
      const list = (await shop.client.get(`/v1/payments/${p.id}/refunds`)).body.data;
      return list.length === 2 && list.every((r: any) => r.status === 'succeeded') && list;
    }, 30_000);
    expect(refunds.map((r: any) => r.amount).sort()).to.deep.equal([1_000, 5_000]);
    expect(
      sim
        .transactions()
        .filter((t) => t.kind === 'refund' && t.depositId === p.id.slice(4))
        .map((t) => t.amount)
        .sort(),
    ).to.deep.equal(['10', '50']);
    expect((await shop.client.get(`/v1/payments/${p.id}`)).body).to.include({
      status: 'refunded',
      amount_refunded: 6_000,
    });

    await final((await pay('orange', '243891234789', { amount: 9_000 })).id);
    const po = await shop.client.post('/v1/payouts', {
      amount: 2_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'orange',
      phone: '243891234789',
      reference: `po-${randomUUID()}`,
    });
    expect(po.status, JSON.stringify(po.body)).to.equal(201);
    const paid = await waitFor(
      shop.client,
      `/v1/payouts/${po.body.id}`,
      (b) => ['succeeded', 'failed'].includes(b.status),
      30_000,
    );
    expect(paid.status).to.equal('succeeded');
    expect(simTx(po.body.id)[0]).to.include({ kind: 'payout', provider: 'ORANGE_COD', status: 'COMPLETED' });
  });

  it('an amount pawaPay cannot carry (decimals in CDF for Vodacom M-Pesa, below its minimum) is 422 before any request leaves', async () => {
    const before = sim.transactions().length;
    const cdf = await shop.client.post(
      '/v1/payments',
      mm('vodacom', '243811234789', { currency: 'CDF', amount: 100_050 }),
    );
    expect(cdf.status).to.equal(422);
    expect(cdf.body.error).to.include({ code: 'amount-not-supported', param: 'amount' });
    expect(cdf.body.error.message).to.match(/vodacom takes no decimals in CDF/);
    const small = await shop.client.post('/v1/payments', mm('vodacom', '243811234789', { amount: 10 }));
    expect(small.status).to.equal(422);
    expect(small.body.error.code).to.equal('amount-not-supported');
    expect(sim.transactions().length).to.equal(before);
    // whole francs are carried
    expect(
      (await shop.client.post('/v1/payments', mm('vodacom', '243811234789', { currency: 'CDF', amount: 100_000 })))
        .status,
    ).to.equal(201);
  });

  it('availability: pawaPay’s own word is shown (a DELAYED provider is delayed), africell has no connector (closed)', async () => {
    sim.setAvailability('ORANGE_COD', 'PAYOUT', 'DELAYED');
    const rows = await eventually(
      async () => {
        const data = (await shop.client.get('/v1/availability')).body.data;
        return data.find((r: any) => r.operator === 'orange').payout === 'delayed' && data;
      },
      90_000,
      500,
    ).catch(() => undefined);
    const now = (await shop.client.get('/v1/availability')).body.data;
    expect(now.find((r: any) => r.operator === 'africell')).to.deep.equal({
      operator: 'africell',
      collection: 'closed',
      payout: 'closed',
      refund: 'closed',
    });
    expect(now.find((r: any) => r.operator === 'vodacom').collection).to.equal('operational');
    // the connector caches pawaPay's availability for a minute: the change shows within it
    expect(rows, 'orange payouts delayed').to.not.equal(undefined);
    sim.setAvailability('ORANGE_COD', 'PAYOUT', 'OPERATIONAL');
  });

  describe('callbacks that must not be believed', () => {
    let capture: Awaited<ReturnType<typeof captureServer>>;
    let genuine: Captured;
    let paymentId: string;
    const send = (headers: Record<string, string>, body: string) =>
      fetch(`${env.baseUrl}/callbacks/pawapay`, { method: 'POST', headers, body });
    const stored = async () => (await env.services.db('provider_callbacks').where({ object_id: paymentId })).length;

    before(async () => {
      // the simulator calls a capture server: the service never hears this genuine callback from it
      capture = await captureServer();
      sim.setCallbackUrl(`${env.baseUrl}/callbacks/pawapay`, capture.url);
      paymentId = (await pay('vodacom', '243811234789')).id;
      genuine = await eventually(async () => capture.captured.find((c) => c.body.includes(paymentId.slice(4))));
      sim.setCallbackUrl(`${env.baseUrl}/callbacks/pawapay`);
    });
    after(async () => capture.close());

    it('forged (signed with a key pawaPay never published), altered, or unsigned: 401 and nothing stored', async () => {
      const body = genuine.body;
      const altered = body.replace('"COMPLETED"', '"FAILED"');
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const keyId = /keyid="([^"]+)"/.exec(genuine.headers['signature-input'])![1];
      const forged = await signMessage({ privateKey, keyId, url: `${env.baseUrl}/callbacks/pawapay`, body });
      const cases: [string, Record<string, string>, string][] = [
        ['forged', forged, body],
        ['altered body', genuine.headers, altered],
        [
          'altered body, digest recomputed',
          { ...genuine.headers, 'content-digest': contentDigest(altered, 'sha-512') },
          altered,
        ],
        ['unsigned', { 'content-type': 'application/json' }, body],
      ];
      const before = await stored();
      for (const [what, headers, text] of cases) expect((await send(headers, text)).status, what).to.equal(401);
      expect(await stored()).to.equal(before);
      expect((await shop.client.get(`/v1/payments/${paymentId}`)).body.status).to.equal('processing');
    });

    it('the genuine one is applied, replayed it changes nothing; stale (the service clock 301 s on) it is refused', async () => {
      expect((await send(genuine.headers, genuine.body)).status).to.equal(200);
      expect((await final(paymentId)).status).to.equal('succeeded');
      expect((await send(genuine.headers, genuine.body)).status).to.equal(200);
      await eventually(
        async () =>
          (await env.services.db('provider_callbacks').where({ object_id: paymentId }).whereNotNull('outcome'))
            .length === 2,
      );
      expect(await credits(paymentId)).to.equal(1);
      env.clock.advance(301_000);
      expect((await send(genuine.headers, genuine.body)).status).to.equal(401);
    });
  });
});

describe('live keys through pawaPay with callback signatures off: a callback is confirmed by a status query', function () {
  this.timeout(90_000);
  let sim: PawapaySimulator;
  let env: TestEnv;
  let shop: MerchantFixture;

  before(async () => {
    sim = await startPawapaySimulator({ token: TOKEN, callbackDelayMs: 100, signCallbacks: false });
    env = await startMoneyEnv({
      LIVE_VODACOM: 'pawapay',
      PAWAPAY_URL: sim.url,
      PAWAPAY_API_TOKEN: TOKEN,
      PAWAPAY_CALLBACK_SIGNATURES: 'off',
    });
    sim.setCallbackUrl(`${env.baseUrl}/callbacks/pawapay`);
    shop = await env.merchant({ environment: 'live', scope: 'full', merchant: FEES });
  });
  after(async () => {
    await env?.close();
    await sim?.close();
  });

  it('an unsigned callback is stored unverified and applied only as the status query says', async () => {
    const res = await shop.client.post('/v1/payments', mm('vodacom', '243811234789'));
    const done = await waitFor(shop.client, `/v1/payments/${res.body.id}`, (b) => b.status !== 'processing', 30_000);
    expect(done.status).to.equal('succeeded');
    const [cb] = await env.services.db('provider_callbacks').where({ object_id: res.body.id });
    expect(cb).to.include({ verified: false, outcome: 'applied' });
    expect(sim.transactions().find((t) => t.id === res.body.id.slice(4))!.statusQueries).to.be.at.least(1);
  });

  it('a forged unsigned "COMPLETED" for a deposit pawaPay failed: the status query says FAILED, so it fails', async () => {
    const res = await shop.client.post('/v1/payments', mm('vodacom', '243811234049'));
    const uuid = res.body.id.slice(4);
    await eventually(async () => sim.transactions().find((t) => t.id === uuid)?.status === 'FAILED');
    const forged = JSON.stringify({
      depositId: uuid,
      status: 'COMPLETED',
      amount: '25.00',
      currency: 'USD',
      country: 'COD',
      payer: { type: 'MMO', accountDetails: { phoneNumber: '243811234049', provider: 'VODACOM_MPESA_COD' } },
      created: new Date().toISOString(),
    });
    expect(
      (
        await fetch(`${env.baseUrl}/callbacks/pawapay`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: forged,
        })
      ).status,
    ).to.equal(200);
    const done = await waitFor(shop.client, `/v1/payments/${res.body.id}`, (b) => b.status !== 'processing', 30_000);
    expect(done).to.include({ status: 'failed', failure_code: 'insufficient-funds' });
    expect(await env.services.db('ledger_transactions').where({ reference_id: res.body.id })).to.have.length(0);
  });
});
