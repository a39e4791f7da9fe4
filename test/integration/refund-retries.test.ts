import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { signRequest } from '../../shared/client/signing';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { send } from '../helpers/http';
import { aMerchant, aSucceededPayment, balanceOf, startMoneyEnv } from '../helpers/money';

/**
 * docs/decisions.md#refund-retries: a refund may carry an Idempotency-Key with the
 * rules of POST /v1/payments, and a signed POST without one is accepted once: the same request
 * again (same signature) within the timestamp tolerance is 409 request-replayed
 * (docs/decisions.md#replayed-signed-requests). Also a signed POST with an empty body and no Content-Type is 415, not a full refund.
 */
describe('refund retries: Idempotency-Key, replayed requests, empty bodies', () => {
  let env: TestEnv;
  const refundsOf = (paymentId: string) =>
    env.services.db('refunds').where({ payment_id: paymentId }).select('id', 'amount');

  before(async () => {
    env = await startMoneyEnv();
  });
  after(async () => env.close());

  /** One signed request, as bytes a merchant (or an eavesdropper) can send again unchanged. */
  function signedRequest(f: MerchantFixture, path: string, body: string, extra: Record<string, string> = {}) {
    const ts = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = {
      Authorization: `Bearer ${f.credential.api_key}`,
      'X-Timestamp': ts,
      'X-Signature': signRequest(f.credential.secret, ts, 'POST', path, body),
      ...(body.length ? { 'Content-Type': 'application/json' } : {}),
      ...extra,
    };
    return async () => ({
      ...(await send(env.baseUrl, 'POST', path, headers, body.length ? body : undefined)),
      sentHeaders: headers,
    });
  }

  /** A captured request sent again: its X-Timestamp, X-Signature and body, with `extra` in place of its Idempotency-Key. */
  function replayOf(
    f: MerchantFixture,
    path: string,
    body: string,
    captured: Record<string, string>,
    extra: Record<string, string>,
  ) {
    const { 'Idempotency-Key': _dropped, ...kept } = captured;
    return send(env.baseUrl, 'POST', path, { ...kept, ...extra }, body);
  }

  it('refuses the same signed refund request sent again with 409 request-replayed: one refund', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const path = `/v1/payments/${p.id}/refund`;
    const request = signedRequest(shop, path, JSON.stringify({ amount: 1_000 }));
    const first = await request();
    expect(first.status, first.text).to.equal(201);
    for (let i = 0; i < 3; i++) {
      const again = await request();
      expect(again.status).to.equal(409);
      expect(again.body.error.code).to.equal('request-replayed');
      expect(again.body.error.request_id).to.be.a('string');
    }
    expect(await refundsOf(p.id)).to.deep.equal([{ id: first.body.id, amount: 1_000 }]);
    expect((await balanceOf(shop.client)).available.USD).to.equal(9_000);
    // a retry on purpose is signed again: another request, another refund
    const resigned = await shop.client.post(path, { amount: 1_000 }, { timestamp: Math.floor(Date.now() / 1000) + 1 });
    expect(resigned.status).to.equal(201);
    expect(await refundsOf(p.id)).to.have.length(2);
  });

  it('refuses a replay of a request still running: ten identical signed requests at once make one refund', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const request = signedRequest(shop, `/v1/payments/${p.id}/refund`, JSON.stringify({ amount: 2_500 }));
    const results = await Promise.all(Array.from({ length: 10 }, () => request()));
    expect(results.filter((r) => r.status === 201)).to.have.length(1);
    const replayed = results.filter((r) => r.status === 409);
    expect(replayed).to.have.length(9);
    for (const r of replayed) expect(r.body.error.code).to.equal('request-replayed');
    expect(await refundsOf(p.id)).to.have.length(1);
    expect((await balanceOf(shop.client)).available.USD).to.equal(7_500);
  });

  it('replays a refund sent again with its Idempotency-Key byte for byte; another body with the key is 409 idempotency-conflict', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const path = `/v1/payments/${p.id}/refund`;
    const key = randomUUID();
    const first = await shop.client.post(path, { amount: 3_000 }, { idempotencyKey: key });
    expect(first.status).to.equal(201);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    // the same request signed again (a later timestamp): answered by its key, not refused as a replay
    const again = await shop.client.post(
      path,
      { amount: 3_000 },
      { idempotencyKey: key, timestamp: Math.floor(Date.now() / 1000) + 1 },
    );
    expect(again.status).to.equal(201);
    expect(again.text).to.equal(first.text);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    // the very same bytes again: with a key, the key answers
    const bytes = signedRequest(shop, path, JSON.stringify({ amount: 3_000 }), { 'Idempotency-Key': key });
    for (let i = 0; i < 2; i++) {
      const replay = await bytes();
      expect(replay.status).to.equal(201);
      expect(replay.text).to.equal(first.text);
    }
    const other = await shop.client.post(path, { amount: 4_000 }, { idempotencyKey: key });
    expect(other.status).to.equal(409);
    expect(other.body.error.code).to.equal('idempotency-conflict');
    expect(await refundsOf(p.id)).to.deep.equal([{ id: first.body.id, amount: 3_000 }]);
    const row = await env.services.db('idempotency_keys').where({ merchant_id: shop.merchant.id, key }).first();
    expect(row).to.include({ status: 'completed', response_status: 201, path: path.toLowerCase() });

    // a refusal is stored too: the same 422 again, nothing refunded
    const tooMuch = randomUUID();
    const refused = await shop.client.post(path, { amount: 9_000 }, { idempotencyKey: tooMuch });
    expect(refused.status).to.equal(422);
    expect(refused.body.error.code).to.equal('refund-exceeds-refundable');
    const refusedAgain = await shop.client.post(path, { amount: 9_000 }, { idempotencyKey: tooMuch });
    expect(refusedAgain.text).to.equal(refused.text);
    expect(refusedAgain.headers.get('idempotent-replayed')).to.equal('true');
    expect(await refundsOf(p.id)).to.have.length(1);
  });

  it('makes one refund of concurrent duplicates with one Idempotency-Key: each gets its answer (or 409 idempotency-in-progress)', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const key = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        shop.client.post(`/v1/payments/${p.id}/refund`, { amount: 1_500 }, { idempotencyKey: key }),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    expect(created.length).to.be.at.least(1);
    expect(new Set(created.map((r) => r.text)).size, 'every 201 is the one answer').to.equal(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.status).to.equal(409);
      expect(r.body.error.code).to.equal('idempotency-in-progress');
      expect(r.headers.get('retry-after')).to.equal('1');
    }
    expect(await refundsOf(p.id)).to.have.length(1);
    expect((await balanceOf(shop.client)).available.USD).to.equal(8_500);
  });

  it('answers 400 invalid-json to a refund with an empty body, whatever its Content-Type, and refunds nothing; {} is a full refund', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    // docs/decisions.md#empty-bodies: a money-moving POST needs a JSON object
    const contentTypes: Record<string, string>[] = [
      {},
      { 'Content-Type': 'application/json' },
      { 'Content-Type': 'text/plain' },
    ];
    for (const headers of contentTypes) {
      const empty = await signedRequest(shop, `/v1/payments/${p.id}/refund`, '', headers)();
      expect(empty.status, JSON.stringify(headers)).to.equal(400);
      expect(empty.body.error.code).to.equal('invalid-json');
    }
    expect(await refundsOf(p.id)).to.have.length(0);
    expect((await shop.client.get(`/v1/payments/${p.id}`)).body).to.include({
      status: 'succeeded',
      amount_refunded: 0,
    });
    // the refusal changed nothing: the same signed request is not taken as a replay of itself
    const again = await signedRequest(shop, `/v1/payments/${p.id}/refund`, '', {
      'Content-Type': 'application/json',
    })();
    expect(again.body.error.code).to.equal('invalid-json');
    const full = await signedRequest(shop, `/v1/payments/${p.id}/refund`, '{}', {
      'Content-Type': 'application/json',
    })();
    expect(full.status, full.text).to.equal(201);
    expect(full.body.amount).to.equal(10_000);
  });

  it('refuses a captured signed refund sent again with new Idempotency-Keys (409 request-replayed): one refund', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const path = `/v1/payments/${p.id}/refund`;
    const body = JSON.stringify({ amount: 100 });
    const first = await signedRequest(shop, path, body, { 'Idempotency-Key': randomUUID() })();
    expect(first.status, first.text).to.equal(201);
    // the eavesdropper keeps X-Timestamp, X-Signature and the body, and puts a fresh key each time
    for (let i = 0; i < 5; i++) {
      const again = await replayOf(shop, path, body, first.sentHeaders, { 'Idempotency-Key': randomUUID() });
      expect(again.status, again.text).to.equal(409);
      expect(again.body.error.code).to.equal('request-replayed');
    }
    const noKey = await replayOf(shop, path, body, first.sentHeaders, {});
    expect(noKey.status).to.equal(409);
    expect(noKey.body.error.code).to.equal('request-replayed');
    expect(await refundsOf(p.id)).to.deep.equal([{ id: first.body.id, amount: 100 }]);
    expect((await balanceOf(shop.client)).available.USD).to.equal(9_900);
  });

  it('refuses a signed refund captured without a key and sent again with one (409 request-replayed): one refund', async () => {
    const shop = await aMerchant(env);
    const p = await aSucceededPayment(shop.client, { amount: 10_000 });
    const path = `/v1/payments/${p.id}/refund`;
    const body = JSON.stringify({ amount: 100 });
    const first = await signedRequest(shop, path, body)();
    expect(first.status, first.text).to.equal(201);
    const keys = [randomUUID(), randomUUID(), randomUUID()];
    for (const key of keys) {
      const again = await replayOf(shop, path, body, first.sentHeaders, { 'Idempotency-Key': key });
      expect(again.status, again.text).to.equal(409);
      expect(again.body.error.code).to.equal('request-replayed');
    }
    expect(await refundsOf(p.id)).to.have.length(1);
    // refused before the key was looked at: none of the keys is held
    expect(await env.services.db('idempotency_keys').whereIn('key', keys)).to.have.length(0);
  });

  it('refuses a captured signed payment and payout sent again with a new Idempotency-Key: one of each', async () => {
    const shop = await aMerchant(env);
    await aSucceededPayment(shop.client, { amount: 10_000 });
    const pay = JSON.stringify({
      amount: 500,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243990000001',
      reference: `r-${randomUUID()}`,
    });
    const payFirst = await signedRequest(shop, '/v1/payments', pay, { 'Idempotency-Key': randomUUID() })();
    expect(payFirst.status, payFirst.text).to.equal(201);
    const payAgain = await replayOf(shop, '/v1/payments', pay, payFirst.sentHeaders, {
      'Idempotency-Key': randomUUID(),
    });
    expect(payAgain.status).to.equal(409);
    expect(payAgain.body.error.code).to.equal('request-replayed');
    const out = JSON.stringify({
      amount: 100,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243990000001',
      reference: `o-${randomUUID()}`,
    });
    const outFirst = await signedRequest(shop, '/v1/payouts', out, { 'Idempotency-Key': randomUUID() })();
    expect(outFirst.status, outFirst.text).to.equal(201);
    const outAgain = await replayOf(shop, '/v1/payouts', out, outFirst.sentHeaders, {
      'Idempotency-Key': randomUUID(),
    });
    expect(outAgain.status).to.equal(409);
    expect(outAgain.body.error.code).to.equal('request-replayed');
    expect(await env.services.db('payouts').where({ merchant_id: shop.merchant.id })).to.have.length(1);
    expect(await env.services.db('payments').where({ merchant_id: shop.merchant.id, amount: 500 })).to.have.length(1);
  });

  describe('a signed payment, whose signature is taken with its key and its row in one statement', () => {
    const paymentBody = () =>
      JSON.stringify({
        amount: 700,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `r-${randomUUID()}`,
      });
    const paymentsWith = (f: MerchantFixture, body: string) =>
      env.services
        .db('payments')
        .where({ merchant_id: f.merchant.id, reference: JSON.parse(body).reference })
        .select('id');

    it('makes one payment of a captured request sent ten times at once, each with a new Idempotency-Key: the others are 409 request-replayed, and no key of theirs is kept', async () => {
      const shop = await aMerchant(env);
      const body = paymentBody();
      const first = signedRequest(shop, '/v1/payments', body, { 'Idempotency-Key': randomUUID() });
      const { sentHeaders } = await first().then((r) => {
        expect(r.status, r.text).to.equal(201);
        return r;
      });
      const keys = Array.from({ length: 10 }, () => randomUUID());
      const again = await Promise.all(
        keys.map((k) => replayOf(shop, '/v1/payments', body, sentHeaders, { 'Idempotency-Key': k })),
      );
      for (const r of again) {
        expect(r.status, r.text).to.equal(409);
        expect(r.body.error.code).to.equal('request-replayed');
      }
      expect(await paymentsWith(shop, body)).to.have.length(1);
      expect(await env.services.db('idempotency_keys').whereIn('key', keys)).to.have.length(0);
    });

    it('makes one payment of ten copies sent at once under ten keys, the first use racing the replays', async () => {
      const shop = await aMerchant(env);
      const body = paymentBody();
      const ts = String(Math.floor(Date.now() / 1000));
      const headers = {
        Authorization: `Bearer ${shop.credential.api_key}`,
        'X-Timestamp': ts,
        'X-Signature': signRequest(shop.credential.secret, ts, 'POST', '/v1/payments', body),
        'Content-Type': 'application/json',
      };
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          send(env.baseUrl, 'POST', '/v1/payments', { ...headers, 'Idempotency-Key': randomUUID() }, body),
        ),
      );
      const created = results.filter((r) => r.status === 201);
      expect(created, results.map((r) => r.status).join(',')).to.have.length(1);
      for (const r of results.filter((r) => r.status !== 201)) {
        expect(r.status).to.equal(409);
        expect(r.body.error.code).to.equal('request-replayed');
      }
      expect(await paymentsWith(shop, body)).to.deep.equal([{ id: created[0].body.id }]);
    });

    it('answers ten identical copies with one key by that key: one payment, each copy its answer byte for byte or 409 idempotency-in-progress', async () => {
      const shop = await aMerchant(env);
      const body = paymentBody();
      const request = signedRequest(shop, '/v1/payments', body, { 'Idempotency-Key': randomUUID() });
      const results = await Promise.all(Array.from({ length: 10 }, () => request()));
      const created = results.filter((r) => r.status === 201);
      expect(created.length, results.map((r) => r.status).join(',')).to.be.at.least(1);
      for (const r of results) {
        if (r.status === 201) expect(r.text).to.equal(created[0].text);
        else expect([r.status, r.body.error.code]).to.deep.equal([409, 'idempotency-in-progress']);
      }
      expect(await paymentsWith(shop, body)).to.deep.equal([{ id: created[0].body.id }]);
      // and once it is done, the copy is its answer again, replayed
      const later = await request();
      expect(later.status).to.equal(201);
      expect(later.headers['idempotent-replayed']).to.equal('true');
      expect(later.text).to.equal(created[0].text);
    });
  });
});
