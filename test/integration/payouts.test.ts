import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { TestEnv } from '../helpers/env';
import type { ServiceClient } from '../../shared/client/signing';
import { aMerchant, aSucceededPayment, balanceOf, startMoneyEnv, waitFor } from '../helpers/money';
import { checkLedger } from '../../shared/ledger/check';

const PO_ID = /^po_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const aPayout = (over: Record<string, unknown> = {}) => ({
  amount: 1_000,
  currency: 'USD',
  method: 'mobile_money',
  operator: 'vodacom',
  phone: '243990000001',
  reference: `payout-${randomUUID()}`,
  ...over,
});

describe('payouts', () => {
  let env: TestEnv;
  const db = () => env.services.db;
  const history = (id: string) =>
    db()('payout_status_changes').where({ payout_id: id }).orderBy('id').select('from_status', 'to_status', 'reason');
  const final = (client: ServiceClient, id: string) =>
    waitFor(client, `/v1/payouts/${id}`, (b) => b.status === 'succeeded' || b.status === 'failed');

  before(async () => {
    env = await startMoneyEnv();
  });
  after(async () => {
    expect(await checkLedger(db()), 'ledger:check after the payouts file').to.deep.equal([]);
    await env.close();
  });

  it('pays out to a phone: amount + fee leave available at creation, the provider confirms, payout.succeeded', async () => {
    // fee 1% + 5 on USD: 1 000 → 15
    const { client, merchant } = await aMerchant(env, { fees: { USD: { percent_bps: 100, fixed: 5 } } });
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchant.id,
      url: 'http://127.0.0.1:9/hook',
      events: ['payout.succeeded'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
    await aSucceededPayment(client, { amount: 20_000 }); // net 20 000 - 205
    const before = await balanceOf(client);
    expect(before.available.USD).to.equal(19_795);

    const body = aPayout({ description: 'Salary', metadata: { employee: 'E-17', month: 11, bonus: false } });
    const res = await client.post('/v1/payouts', body, { headers: { 'X-Request-Id': 'req-payout-1' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const p = res.body;
    expect(p.id).to.match(PO_ID);
    expect(p).to.deep.equal({
      id: p.id,
      object: 'payout',
      status: 'pending',
      amount: 1_000,
      fee: 15,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243990000001',
      reference: body.reference,
      description: 'Salary',
      environment: 'test',
      failure_code: null,
      failure_message: null,
      created: p.created,
      completed: null,
      metadata: { employee: 'E-17', month: 11, bonus: false },
    });
    expect(Object.keys(p.metadata)).to.deep.equal(['employee', 'month', 'bonus']);
    expect((await balanceOf(client)).available.USD).to.equal(19_795 - 1_015);
    const jobs = await db()('outbox').whereRaw(`payload->>'payoutId' = ?`, [p.id]).select('queue', 'payload');
    expect(jobs).to.deep.equal([{ queue: 'payout', payload: { payoutId: p.id, requestId: 'req-payout-1' } }]);

    const done = await final(client, p.id);
    expect(done).to.include({ id: p.id, status: 'succeeded', failure_code: null, failure_message: null });
    expect(done.completed).to.be.a('number').and.at.least(p.created);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 18_780, CDF: 0 }, pending: { USD: 0, CDF: 0 } });

    expect(await history(p.id)).to.deep.equal([
      { from_status: null, to_status: 'pending', reason: 'created' },
      { from_status: 'pending', to_status: 'processing', reason: 'provider-accepted' },
      { from_status: 'processing', to_status: 'succeeded', reason: 'provider-callback' },
    ]);
    const row = await db()('payouts').where({ id: p.id }).first();
    expect(row).to.include({ merchant_id: merchant.id, provider: 'vodacom-sandbox', version: 3 });
    expect(row.provider_ref).to.match(/^SBX-/);
    const events = await db()('events').where({ object_id: p.id }).select('type', 'object_version', 'body');
    expect(events.map((e) => [e.type, e.object_version])).to.deep.equal([['payout.succeeded', 3]]);
    expect(events[0].body.data.object).to.deep.equal(done);
    const deliveries = await db()('webhook_deliveries').where({ event_id: events[0].body.id }).pluck('webhook_id');
    expect(deliveries).to.deep.equal([hook.body.id]);
    // the fee is the platform's once the payout is through
    const kinds = await db()('ledger_transactions').where({ reference_id: p.id }).pluck('kind');
    expect(kinds.sort()).to.deep.equal(['payout_debit', 'payout_deliver']);
    const fees = await db()('ledger_entries as e')
      .join('ledger_transactions as t', 't.id', 'e.transaction_id')
      .join('ledger_accounts as a', 'a.id', 'e.account_id')
      .where({ 't.reference_id': p.id, 'a.kind': 'fees' })
      .sum('e.amount as total');
    expect(Number(fees[0].total)).to.equal(15);

    expect((await client.get(`/v1/payouts/${p.id}`)).body).to.deep.equal(done);
  });

  it('a payout the provider refuses fails with payout.failed and gives amount + fee back', async () => {
    const { client } = await aMerchant(env, { fees: { CDF: { percent_bps: 0, fixed: 300 } } });
    await aSucceededPayment(client, { currency: 'CDF', amount: 50_000 }); // net 49 700
    // the sandbox fails any payout to 243990000005
    const res = await client.post(
      '/v1/payouts',
      aPayout({ currency: 'CDF', amount: 20_000, phone: '243990000005', operator: 'orange' }),
    );
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ fee: 300, status: 'pending' });
    expect((await balanceOf(client)).available.CDF).to.equal(49_700 - 20_300);

    const done = await final(client, res.body.id);
    expect(done).to.include({ status: 'failed', failure_code: 'recipient-inactive' });
    expect(done.failure_message).to.be.a('string').and.not.empty;
    expect(done.completed).to.be.a('number');
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 0, CDF: 49_700 }, pending: { USD: 0, CDF: 0 } });
    expect((await history(res.body.id)).map((h) => h.to_status)).to.deep.equal(['pending', 'processing', 'failed']);
    const events = await db()('events').where({ object_id: res.body.id }).select('type', 'body');
    expect(events.map((e) => e.type)).to.deep.equal(['payout.failed']);
    expect(events[0].body.data.object).to.deep.equal(done);
    const kinds = await db()('ledger_transactions').where({ reference_id: res.body.id }).pluck('kind');
    expect(kinds.sort()).to.deep.equal(['payout_debit', 'payout_return']);
  });

  describe('bad requests get their exact error and move no money', () => {
    let shop: Awaited<ReturnType<typeof aMerchant>>;
    let snapshot: () => Promise<unknown>;

    before(async () => {
      shop = await aMerchant(env, { fees: { USD: { percent_bps: 0, fixed: 50 } } });
      await aSucceededPayment(shop.client, { amount: 5_000 });
      snapshot = async () => ({
        balance: await balanceOf(shop.client),
        payouts: await db()('payouts').where({ merchant_id: shop.merchant.id }).count('* as n'),
        postings: await db()('ledger_transactions').where({ merchant_id: shop.merchant.id }).count('* as n'),
      });
    });

    async function refused(
      body: unknown,
      status: number,
      code: string,
      param?: string,
      client: ServiceClient = shop.client,
    ) {
      const before = await snapshot();
      const res = await client.post('/v1/payouts', body);
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      expect(res.body.error.code).to.equal(code);
      if (param) expect(res.body.error.param).to.equal(param);
      expect(await snapshot()).to.deep.equal(before);
    }

    it('more than the balance, fee included: 422 insufficient-balance', async () => {
      await refused(aPayout({ amount: 4_951 }), 422, 'insufficient-balance');
      await refused(aPayout({ currency: 'CDF', amount: 1 }), 422, 'insufficient-balance');
    });

    for (const phone of [
      '24399000000',
      '2439900000011',
      '+243990000001',
      '0990000001',
      '243 990000001',
      'abc',
      243990000001,
    ]) {
      it(`a malformed number (${JSON.stringify(phone)}): 400 validation-failed on phone`, async () => {
        await refused(aPayout({ phone }), 400, 'validation-failed', 'phone');
      });
    }

    for (const currency of ['EUR', 'usd', '', 840]) {
      it(`a currency other than USD or CDF (${JSON.stringify(currency)}): 400 validation-failed on currency`, async () => {
        await refused(aPayout({ currency }), 400, 'validation-failed', 'currency');
      });
    }

    for (const amount of [0, -1, 1.5, '1000', null]) {
      it(`amount ${JSON.stringify(amount)}: 400 validation-failed on amount`, async () => {
        await refused(aPayout({ amount }), 400, 'validation-failed', 'amount');
      });
    }

    it('missing or unknown fields, other method or operator: 400 validation-failed naming the field', async () => {
      for (const field of ['amount', 'currency', 'operator', 'phone', 'reference']) {
        const body: Record<string, unknown> = aPayout();
        delete body[field];
        await refused(body, 400, 'validation-failed', field);
      }
      await refused(aPayout({ method: 'card' }), 400, 'validation-failed', 'method');
      await refused(aPayout({ operator: 'mpesa' }), 400, 'validation-failed', 'operator');
      await refused(aPayout({ bank: 'x' }), 400, 'validation-failed', 'bank');
      await refused(aPayout({ reference: '' }), 400, 'validation-failed', 'reference');
      await refused(
        aPayout({ metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }),
        400,
        'validation-failed',
        'metadata',
      );
      await refused(aPayout({ metadata: { ['k'.repeat(41)]: 'v' } }), 400, 'validation-failed', 'metadata');
      await refused(aPayout({ metadata: { '': 'v' } }), 400, 'validation-failed', 'metadata');
      await refused(aPayout({ amount: 1e12 + 1 }), 400, 'validation-failed', 'amount');
      await refused(aPayout({ amount: 2 ** 53 }), 400, 'validation-failed', 'amount');
    });

    it('a live number of another operator: 400 operator-mismatch', async () => {
      const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'full',
      });
      const live = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: c.body.api_key,
        secret: c.body.secret,
      });
      // 81 is vodacom's prefix
      await refused(aPayout({ operator: 'airtel', phone: '243810000001' }), 400, 'operator-mismatch', 'phone', live);
      // the right operator gets as far as the routing table: no live connector serves vodacom here
      await refused(
        aPayout({ operator: 'vodacom', phone: '243810000001' }),
        422,
        'operator-unavailable',
        'operator',
        live,
      );
    });

    it('a reference already used by the merchant in this environment: 409 reference-conflict', async () => {
      const first = await shop.client.post('/v1/payouts', aPayout({ reference: 'run-2026-11' }));
      expect(first.status).to.equal(201);
      // its outcome first: a deliver posting landing between two snapshots would look like a refused request moving money
      await final(shop.client, first.body.id);
      await refused(aPayout({ reference: 'run-2026-11', amount: 5 }), 409, 'reference-conflict', 'reference');
      const other = await aMerchant(env);
      await aSucceededPayment(other.client, { amount: 2_000 });
      expect(
        (await other.client.post('/v1/payouts', aPayout({ reference: 'run-2026-11' }))).status,
        'another merchant may use it',
      ).to.equal(201);
    });

    it('without an Idempotency-Key, or with a key that is not the full scope: refused by the pipeline', async () => {
      const before = await snapshot();
      const noKey = await shop.client.post('/v1/payouts', aPayout(), { idempotencyKey: false });
      expect(noKey.status).to.equal(400);
      expect(noKey.body.error.code).to.equal('idempotency-key-required');
      for (const scope of ['read', 'payments'] as const) {
        const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
          environment: 'test',
          scope,
        });
        const limited = new (shop.client.constructor as any)({
          baseUrl: env.baseUrl,
          apiKey: c.body.api_key,
          secret: c.body.secret,
        });
        const res = await limited.post('/v1/payouts', aPayout());
        expect(res.status).to.equal(403);
        expect(res.body.error.code).to.equal('insufficient-scope');
        expect((await limited.get('/v1/payouts')).status, 'a read key may list').to.equal(200);
      }
      expect(await snapshot()).to.deep.equal(before);
    });

    it('the same Idempotency-Key and body: one payout, the same answer', async () => {
      const key = randomUUID();
      const body = JSON.stringify(aPayout({ amount: 100 }));
      const a = await shop.client.post('/v1/payouts', body, { idempotencyKey: key });
      const b = await shop.client.post('/v1/payouts', body, { idempotencyKey: key });
      expect(a.status).to.equal(201);
      expect(b.status).to.equal(201);
      expect(b.text).to.equal(a.text);
      expect(await db()('payouts').where({ reference: JSON.parse(body).reference })).to.have.length(1);
      await final(shop.client, a.body.id);
    });
  });

  describe('GET /v1/payouts and /v1/payouts/{id}', () => {
    it('lists newest first with cursor pagination and filters; 404 for unknown or foreign ids', async () => {
      const { client } = await aMerchant(env);
      await aSucceededPayment(client, { amount: 10_000 });
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await client.post(
          '/v1/payouts',
          aPayout({ amount: 100 + i, reference: `list-${i}`, phone: i === 4 ? '243990000005' : '243990000001' }),
        );
        made.push(res.body.id);
      }
      for (const id of made) await final(client, id);

      const page1 = await client.get('/v1/payouts?limit=2');
      expect(page1.status).to.equal(200);
      expect(page1.body).to.include({ object: 'list', has_more: true });
      const page2 = await client.get(`/v1/payouts?limit=2&cursor=${page1.body.next_cursor}`);
      const page3 = await client.get(`/v1/payouts?limit=2&cursor=${page2.body.next_cursor}`);
      expect(page3.body).to.include({ has_more: false, next_cursor: null });
      const seen = [...page1.body.data, ...page2.body.data, ...page3.body.data].map((p: any) => p.id);
      expect([...seen].sort()).to.deep.equal([...made].sort());
      const created = [...page1.body.data, ...page2.body.data, ...page3.body.data].map((p: any) => p.created);
      expect(created).to.deep.equal([...created].sort((a, b) => b - a));

      const failed = await client.get('/v1/payouts?status=failed');
      expect(failed.body.data.map((p: any) => p.id)).to.deep.equal([made[4]]);
      const byRef = await client.get('/v1/payouts?reference=list-2');
      expect(byRef.body.data.map((p: any) => p.id)).to.deep.equal([made[2]]);

      for (const q of ['limit=0', 'limit=101', 'limit=x', 'status=done', 'cursor=yesterday', 'colour=red']) {
        const res = await client.get(`/v1/payouts?${q}`);
        expect(res.status, q).to.equal(400);
        expect(res.body.error.code).to.equal('validation-failed');
      }

      const other = await aMerchant(env);
      expect((await other.client.get(`/v1/payouts/${made[0]}`)).status).to.equal(404);
      expect((await other.client.get('/v1/payouts')).body.data).to.deep.equal([]);
      for (const id of ['po_00000000-0000-4000-8000-000000000000', 'nope', made[0].toUpperCase()]) {
        const res = await client.get(`/v1/payouts/${id}`);
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('not-found');
      }
    });
  });

  it('50 concurrent payouts against a balance that covers 10 of them: 10 succeed, 40 get 422, the money is exact', async () => {
    const { client, merchant } = await aMerchant(env, { fees: { USD: { percent_bps: 0, fixed: 10 } } });
    // two payments: available = 10 100 + 500 - 20 = 10 580; ten payouts of 1 000 + 10 take 10 100
    await aSucceededPayment(client, { amount: 10_100 });
    await aSucceededPayment(client, { amount: 500 });
    expect((await balanceOf(client)).available.USD).to.equal(10_580);

    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.post('/v1/payouts', aPayout({ reference: `burst-${i}` }))),
    );
    const created = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 422);
    expect(created).to.have.length(10);
    expect(refused).to.have.length(40);
    for (const r of refused) expect(r.body.error.code).to.equal('insufficient-balance');
    expect((await balanceOf(client)).available.USD).to.equal(480);
    expect(await db()('payouts').where({ merchant_id: merchant.id })).to.have.length(10);
    expect(await checkLedger(db())).to.deep.equal([]);

    for (const r of created) await final(client, r.body.id);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 480, CDF: 0 }, pending: { USD: 0, CDF: 0 } });
  });
});
