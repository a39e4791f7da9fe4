import { expect } from 'chai';
import type { TestEnv } from '../helpers/env';
import {
  aMerchant,
  aPayment,
  aSucceededCardPayment,
  aSucceededPayment,
  balanceOf,
  startMoneyEnv,
  waitFor,
} from '../helpers/money';
import { checkLedger } from '../../shared/ledger/check';

const RE_ID = /^re_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('refunds', () => {
  let env: TestEnv;
  const db = () => env.services.db;
  const refundRows = (paymentId: string) => db()('refunds').where({ payment_id: paymentId });
  const history = (refundId: string) =>
    db()('refund_status_changes')
      .where({ refund_id: refundId })
      .orderBy('id')
      .select('from_status', 'to_status', 'reason');
  const eventsOf = (objectId: string) =>
    db()('events').where({ object_id: objectId }).orderBy('object_version').select('type', 'object_version', 'body');
  const refundsFinal = (client: any, paymentId: string) =>
    waitFor(
      client,
      `/v1/payments/${paymentId}/refunds`,
      (b) => b.data.length > 0 && b.data.every((r: any) => r.status !== 'pending'),
    );

  before(async () => {
    env = await startMoneyEnv();
  });
  after(async () => {
    expect(await checkLedger(db()), 'ledger:check after the refunds file').to.deep.equal([]);
    await env.close();
  });

  it('refunds a payment in full by default: pending at once, succeeded by the provider, payment refunded', async () => {
    const { client, merchant } = await aMerchant(env);
    const p = await aSucceededPayment(client);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 10_000, CDF: 0 }, pending: { USD: 0, CDF: 0 } });

    const res = await client.post(`/v1/payments/${p.id}/refund`, {}, { headers: { 'X-Request-Id': 'req-refund-1' } });
    expect(res.status).to.equal(201);
    const r = res.body;
    expect(r.id).to.match(RE_ID);
    expect(r).to.deep.equal({
      id: r.id,
      object: 'refund',
      transaction_id: p.id,
      amount: 10_000,
      currency: 'USD',
      reason: null,
      status: 'pending',
      failure_code: null,
      failure_message: null,
      created: r.created,
      completed: null,
    });
    // the payment moves to refunded in the same transaction; available is debited at once
    const afterCreate = (await client.get(`/v1/payments/${p.id}`)).body;
    expect(afterCreate).to.include({ status: 'refunded', amount_refunded: 10_000 });
    // (pending holds it until the provider answers: test/integration/balance.test.ts, without a refund pool)
    expect((await balanceOf(client)).available).to.deep.equal({ USD: 0, CDF: 0 });
    const job = await db()('outbox').whereRaw(`payload->>'refundId' = ?`, [r.id]).select('queue', 'payload');
    expect(job).to.deep.equal([{ queue: 'refund', payload: { refundId: r.id, requestId: 'req-refund-1' } }]);

    const list = await refundsFinal(client, p.id);
    expect(list.object).to.equal('list');
    expect(list.data).to.have.length(1);
    const done = list.data[0];
    expect(done).to.include({ id: r.id, status: 'succeeded', amount: 10_000, failure_code: null });
    expect(done.completed).to.be.a('number').and.at.least(r.created);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 0, CDF: 0 }, pending: { USD: 0, CDF: 0 } });

    const row = await db()('refunds').where({ id: r.id }).first();
    expect(row).to.include({ phone: '243990000001', operator: 'vodacom', provider: 'vodacom-sandbox', version: 2 });
    expect(row.provider_ref).to.match(/^SBX-/);
    expect(await history(r.id)).to.deep.equal([
      { from_status: null, to_status: 'pending', reason: 'created' },
      { from_status: 'pending', to_status: 'succeeded', reason: 'provider-callback' },
    ]);
    const events = await eventsOf(r.id);
    expect(events.map((e) => [e.type, e.object_version])).to.deep.equal([['refund.succeeded', 2]]);
    expect(events[0].body.data.object).to.deep.equal(done);
    expect(events[0].body.data.object_version).to.equal(2);
    const payHistory = await db()('payment_status_changes')
      .where({ payment_id: p.id })
      .orderBy('id')
      .select('from_status', 'to_status');
    expect(payHistory.slice(-1)).to.deep.equal([{ from_status: 'succeeded', to_status: 'refunded' }]);
    const postings = await db()('ledger_transactions')
      .where({ reference_id: r.id })
      .orderBy('created_at')
      .pluck('kind');
    expect(postings.sort()).to.deep.equal(['refund_debit', 'refund_deliver']);
    const txs = await db()('ledger_transactions').where({ merchant_id: merchant.id }).pluck('kind');
    expect(txs.sort()).to.deep.equal(['payment_credit', 'refund_debit', 'refund_deliver']);
  });

  it('refunds in parts: the payment stays succeeded until the parts reach amount_charged, then nothing is left', async () => {
    const { client } = await aMerchant(env);
    const p = await aSucceededPayment(client, { amount: 5_000 });
    const first = await client.post(`/v1/payments/${p.id}/refund`, { amount: 1_200, reason: 'one item returned' });
    expect(first.status).to.equal(201);
    expect(first.body).to.include({ amount: 1_200, reason: 'one item returned', status: 'pending' });
    expect((await client.get(`/v1/payments/${p.id}`)).body).to.include({ status: 'succeeded', amount_refunded: 1_200 });
    expect((await balanceOf(client)).available.USD).to.equal(3_800);

    const rest = await client.post(`/v1/payments/${p.id}/refund`, {});
    expect(rest.status).to.equal(201);
    expect(rest.body.amount, 'the default is what is left').to.equal(3_800);
    expect((await client.get(`/v1/payments/${p.id}`)).body).to.include({ status: 'refunded', amount_refunded: 5_000 });

    const list = await refundsFinal(client, p.id);
    expect(list.data.map((r: any) => [r.id, r.amount, r.status])).to.deep.equal([
      [first.body.id, 1_200, 'succeeded'],
      [rest.body.id, 3_800, 'succeeded'],
    ]);
    const again = await client.post(`/v1/payments/${p.id}/refund`, { amount: 1 });
    expect(again.status).to.equal(422);
    expect(again.body.error.code).to.equal('payment-not-refundable');
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 0, CDF: 0 }, pending: { USD: 0, CDF: 0 } });
  });

  it('a refund the provider refuses fails with refund.failed, gives the money back and reopens the payment', async () => {
    const { client, merchant } = await aMerchant(env);
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchant.id,
      url: 'http://127.0.0.1:9/hook',
      events: ['refund.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
    // the sandbox lets 243990000005 pay, and fails any refund to it
    const p = await aSucceededPayment(client, {
      phone: '243990000005',
      operator: 'airtel',
      currency: 'CDF',
      amount: 25_000,
    });
    const res = await client.post(`/v1/payments/${p.id}/refund`, { reason: 'cancelled order' });
    expect(res.status).to.equal(201);
    expect((await balanceOf(client)).available).to.deep.equal({ USD: 0, CDF: 0 });

    const list = await refundsFinal(client, p.id);
    const r = list.data[0];
    expect(r).to.include({
      id: res.body.id,
      status: 'failed',
      failure_code: 'recipient-inactive',
      currency: 'CDF',
      reason: 'cancelled order',
    });
    expect(r.failure_message).to.be.a('string').and.not.empty;
    expect(r.completed).to.be.a('number');
    expect((await client.get(`/v1/payments/${p.id}`)).body).to.include({ status: 'succeeded', amount_refunded: 0 });
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 0, CDF: 25_000 }, pending: { USD: 0, CDF: 0 } });

    expect(await history(r.id)).to.deep.equal([
      { from_status: null, to_status: 'pending', reason: 'created' },
      { from_status: 'pending', to_status: 'failed', reason: 'provider-callback' },
    ]);
    const events = await eventsOf(r.id);
    expect(events.map((e) => e.type)).to.deep.equal(['refund.failed']);
    expect(events[0].body.data.object).to.deep.equal(r);
    // written with the event: the delivery to the merchant's endpoint subscribed to refund.*
    const deliveries = await db()('webhook_deliveries').where({ event_id: events[0].body.id }).pluck('webhook_id');
    expect(deliveries).to.deep.equal([hook.body.id]);
    const payHistory = await db()('payment_status_changes')
      .where({ payment_id: p.id })
      .orderBy('id')
      .select('from_status', 'to_status');
    expect(payHistory.slice(-2)).to.deep.equal([
      { from_status: 'succeeded', to_status: 'refunded' },
      { from_status: 'refunded', to_status: 'succeeded' },
    ]);
    const kinds = await db()('ledger_transactions').where({ reference_id: r.id }).pluck('kind');
    expect(kinds.sort()).to.deep.equal(['refund_debit', 'refund_return']);

    // the payment is refundable again, for the whole amount
    const retry = await client.post(`/v1/payments/${p.id}/refund`, { amount: 25_000 });
    expect(retry.status).to.equal(201);
    await refundsFinal(client, p.id);
    expect((await balanceOf(client)).available.CDF).to.equal(25_000);
  });

  it('keeps the fee: a full refund needs the fee from elsewhere in available (422 insufficient-balance)', async () => {
    const { client } = await aMerchant(env, { fees: { USD: { percent_bps: 250, fixed: 10 } } });
    const p = await aSucceededPayment(client);
    expect(p).to.include({ amount_charged: 10_000, amount_net: 9_740, fee: 260 });
    const res = await client.post(`/v1/payments/${p.id}/refund`, {});
    expect(res.status).to.equal(422);
    expect(res.body.error.code).to.equal('insufficient-balance');
    expect(await refundRows(p.id)).to.have.length(0);
    expect((await client.get(`/v1/payments/${p.id}`)).body).to.include({ status: 'succeeded', amount_refunded: 0 });
    expect((await balanceOf(client)).available.USD).to.equal(9_740);

    // a second payment brings the rest: now the first one can be refunded in full
    await aSucceededPayment(client, { amount: 1_000 });
    const full = await client.post(`/v1/payments/${p.id}/refund`, {});
    expect(full.status).to.equal(201);
    expect(full.body.amount).to.equal(10_000);
    expect((await balanceOf(client)).available.USD).to.equal(9_740 + 965 - 10_000);
    await refundsFinal(client, p.id);
  });

  describe('bad requests get their exact error and move no money', () => {
    let shop: Awaited<ReturnType<typeof aMerchant>>;
    let paid: any;
    let snapshot: () => Promise<unknown>;

    before(async () => {
      shop = await aMerchant(env);
      paid = await aSucceededPayment(shop.client, { amount: 3_000 });
      snapshot = async () => ({
        balance: await balanceOf(shop.client),
        refunds: await db()('refunds').where({ merchant_id: shop.merchant.id }).count('* as n'),
        postings: await db()('ledger_transactions').where({ merchant_id: shop.merchant.id }).count('* as n'),
        payments: await db()('payments')
          .where({ merchant_id: shop.merchant.id })
          .orderBy('id')
          .select('id', 'status', 'amount_refunded', 'version'),
      });
    });

    async function refused(path: string, body: unknown, status: number, code: string, param?: string) {
      const before = await snapshot();
      const res = await shop.client.post(path, body);
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      expect(res.body.error.code).to.equal(code);
      if (param) expect(res.body.error.param).to.equal(param);
      expect(await snapshot()).to.deep.equal(before);
    }

    for (const [what, amount] of [
      ['zero', 0],
      ['negative', -500],
      ['fractional', 10.5],
      ['string', '100'],
      ['null', null],
      ['too large', 2 ** 53],
      ['above 10^12', 1e12 + 1],
    ] as const) {
      it(`a ${what} amount: 400 validation-failed on amount`, async () => {
        await refused(`/v1/payments/${paid.id}/refund`, { amount }, 400, 'validation-failed', 'amount');
      });
    }

    it('an unknown field or a reason that is not text: 400 validation-failed', async () => {
      await refused(
        `/v1/payments/${paid.id}/refund`,
        { amount: 10, currency: 'USD' },
        400,
        'validation-failed',
        'currency',
      );
      await refused(`/v1/payments/${paid.id}/refund`, { reason: 42 }, 400, 'validation-failed', 'reason');
      await refused(`/v1/payments/${paid.id}/refund`, { reason: 'x'.repeat(501) }, 400, 'validation-failed', 'reason');
    });

    it('an amount over what is left to refund: 422 refund-exceeds-refundable', async () => {
      await refused(`/v1/payments/${paid.id}/refund`, { amount: 3_001 }, 422, 'refund-exceeds-refundable');
      const part = await shop.client.post(`/v1/payments/${paid.id}/refund`, { amount: 1_000 });
      expect(part.status).to.equal(201);
      // its outcome first: a deliver posting landing between two snapshots would look like a refused request moving money
      await refundsFinal(shop.client, paid.id);
      await refused(`/v1/payments/${paid.id}/refund`, { amount: 2_001 }, 422, 'refund-exceeds-refundable');
      await refundsFinal(shop.client, paid.id); // the next tests compare balances: the provider's answer must not land in between
    });

    it('an unknown, malformed or foreign payment: 404 not-found', async () => {
      await refused('/v1/payments/pay_00000000-0000-4000-8000-000000000000/refund', {}, 404, 'not-found');
      await refused('/v1/payments/nope/refund', {}, 404, 'not-found');
      await refused(`/v1/payments/${paid.id.toUpperCase()}/refund`, {}, 404, 'not-found');
      const other = await aMerchant(env);
      const theirs = await aSucceededPayment(other.client);
      await refused(`/v1/payments/${theirs.id}/refund`, {}, 404, 'not-found');
      expect((await shop.client.get(`/v1/payments/${theirs.id}/refunds`)).status).to.equal(404);
      // the same merchant's live key does not see its test payments
      const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'full',
      });
      const live = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: c.body.api_key,
        secret: c.body.secret,
      });
      const res = await live.post(`/v1/payments/${paid.id}/refund`, {});
      expect(res.status).to.equal(404);
      expect((await live.get(`/v1/payments/${paid.id}/refunds`)).status).to.equal(404);
    });

    it('a payment still processing, failed, or a card payment: 422 with its code', async () => {
      const processing = await aPayment(shop.client, { phone: '243990000004' }); // the provider never answers
      await waitFor(shop.client, `/v1/payments/${processing.id}`, (b) => b.provider_ref !== null); // pushed: nothing else will change it here
      await refused(`/v1/payments/${processing.id}/refund`, {}, 422, 'payment-not-refundable');
      const failing = await aPayment(shop.client, { phone: '243990000002' });
      await waitFor(shop.client, `/v1/payments/${failing.id}`, (b) => b.status === 'failed');
      await refused(`/v1/payments/${failing.id}/refund`, { amount: 1 }, 422, 'payment-not-refundable');
      const card = await aSucceededCardPayment(env, shop.merchant.id);
      await refused(`/v1/payments/${card}/refund`, {}, 422, 'card-refund-not-supported');
    });

    it('a key without the full scope: 403 insufficient-scope; a read key may list refunds', async () => {
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
        const before = await snapshot();
        const res = await limited.post(`/v1/payments/${paid.id}/refund`, {});
        expect(res.status).to.equal(403);
        expect(res.body.error.code).to.equal('insufficient-scope');
        expect(await snapshot()).to.deep.equal(before);
        const list = await limited.get(`/v1/payments/${paid.id}/refunds`);
        expect(list.status).to.equal(200);
        expect(list.body.object).to.equal('list');
      }
    });
  });

  it('50 concurrent refunds against a payment that covers 10 of them: 10 succeed, 40 get 422, the money is exact', async () => {
    const { client, merchant } = await aMerchant(env);
    // 10 500 covers ten refunds of 1 000; the 500 left is too little for an eleventh
    const p = await aSucceededPayment(client, { amount: 10_500 });
    // fifty requests, not one sent fifty times: each its own body, so its own signature (one signature is accepted once)
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        client.post(`/v1/payments/${p.id}/refund`, { amount: 1_000, reason: `r${i}` }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).to.have.length(10);
    expect(statuses.filter((s) => s === 422)).to.have.length(40);
    for (const r of results.filter((x) => x.status === 422))
      expect(r.body.error.code).to.equal('refund-exceeds-refundable');

    expect((await client.get(`/v1/payments/${p.id}`)).body).to.include({
      status: 'succeeded',
      amount_refunded: 10_000,
    });
    expect((await balanceOf(client)).available.USD).to.equal(500);
    expect(await checkLedger(db())).to.deep.equal([]);
    expect(
      await db()('ledger_transactions').where({ merchant_id: merchant.id, kind: 'refund_debit' }).count('* as n'),
    ).to.deep.equal([{ n: 10 }]);

    const list = await refundsFinal(client, p.id);
    expect(list.data).to.have.length(10);
    expect(list.data.every((r: any) => r.status === 'succeeded' && r.amount === 1_000)).to.equal(true);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 500, CDF: 0 }, pending: { USD: 0, CDF: 0 } });
  });

  it('50 concurrent full refunds of one payment: exactly one is made, the others find it refunded', async () => {
    const { client } = await aMerchant(env);
    const p = await aSucceededPayment(client, { amount: 7_000 });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.post(`/v1/payments/${p.id}/refund`, { reason: `r${i}` })),
    );
    expect(results.filter((r) => r.status === 201)).to.have.length(1);
    const refusals = results.filter((r) => r.status === 422).map((r) => r.body.error.code);
    expect(refusals).to.have.length(49);
    expect(new Set(refusals)).to.deep.equal(new Set(['payment-not-refundable']));
    expect((await balanceOf(client)).available.USD).to.equal(0);
    expect(await checkLedger(db())).to.deep.equal([]);
    await refundsFinal(client, p.id);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 0, CDF: 0 }, pending: { USD: 0, CDF: 0 } });
  });
});
