import { ManualClock } from '../../shared/clock';
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

const PAY_ID = /^pay_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const mm = (over: Record<string, unknown> = {}) => ({
  amount: 10_000,
  currency: 'USD',
  method: 'mobile_money',
  operator: 'vodacom',
  phone: '243990000001',
  reference: `ref-${randomUUID()}`,
  ...over,
});

const CACHE_MS = 200;
const CACHE_WAIT_MS = CACHE_MS + 50;

describe('payments API', () => {
  let env: TestEnv;
  // the app's caches read this clock: moved past them, not slept through
  const clock = new ManualClock(Date.now(), true);
  let shop: MerchantFixture;
  const count = async (table: string) => Number((await env.services.db(table).count<{ c: string }[]>('* as c'))[0].c);

  before(async () => {
    // rate limiting is the pipeline's concern; this file sends far more than 100 requests a minute per key
    // and merchant terms are cached for CACHE_MS, so that a change reaches the web within a test
    env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '100000', CREDENTIAL_CACHE_MS: String(CACHE_MS) }, {}, { clock });
    shop = await env.merchant({
      scope: 'payments',
      merchant: { fees: { USD: { percent_bps: 250, fixed: 10 }, CDF: { percent_bps: 100, fixed: 0 } } },
    });
  });
  after(async () => env.close());

  describe('POST /v1/payments', () => {
    it('creates a mobile-money payment in processing, with its history row and its push job only', async () => {
      const body = mm({ description: 'Order 42', metadata: { order: '42', zeta: 1, alpha: true } });
      const res = await shop.client.post('/v1/payments', body, { headers: { 'X-Request-Id': 'req-create-1' } });
      expect(res.status).to.equal(201);
      const p = res.body;
      expect(p.id).to.match(PAY_ID);
      expect(p).to.deep.equal({
        id: p.id,
        object: 'payment',
        status: 'processing',
        method: 'mobile_money',
        environment: 'test',
        currency: 'USD',
        amount_charged: 10_000,
        amount_net: 9_740,
        fee: 260,
        fee_bearer: 'merchant',
        amount_refunded: 0,
        reference: body.reference,
        payment_link: null,
        provider: 'vodacom-sandbox',
        provider_ref: null,
        failure_code: null,
        failure_message: null,
        created: p.created,
        completed: null,
        metadata: { order: '42', zeta: 1, alpha: true },
      });
      expect(Object.keys(p.metadata), 'metadata keeps the order sent').to.deep.equal(['order', 'zeta', 'alpha']);
      expect(Math.abs(p.created - Date.now() / 1000)).to.be.below(5);

      const row = await env.services.db('payments').where({ id: p.id }).first();
      expect(row).to.include({
        merchant_id: shop.merchant.id,
        status: 'processing',
        version: 1,
        phone: '243990000001',
        operator: 'vodacom',
        amount: 10_000,
        description: 'Order 42',
      });
      const history = await env.services
        .db('payment_status_changes')
        .where({ payment_id: p.id })
        .select('from_status', 'to_status', 'reason');
      expect(history).to.deep.equal([{ from_status: null, to_status: 'processing', reason: 'created' }]);
      const jobs = await env.services
        .db('outbox')
        .whereRaw(`payload->>'paymentId' = ?`, [p.id])
        .select('queue', 'job_name', 'payload');
      expect(jobs).to.deep.equal([
        { queue: 'provider-push', job_name: 'push', payload: { paymentId: p.id, requestId: 'req-create-1' } },
      ]);
    });

    it('takes the fee bearer from the merchant, overridable per payment', async () => {
      const customerShop = await env.merchant({
        scope: 'payments',
        merchant: { fee_bearer: 'customer', fees: { USD: { percent_bps: 250, fixed: 10 } } },
      });
      const byDefault = await customerShop.client.post('/v1/payments', mm());
      expect(byDefault.body).to.include({
        fee_bearer: 'customer',
        amount_charged: 10_260,
        amount_net: 10_000,
        fee: 260,
      });
      const overridden = await customerShop.client.post('/v1/payments', mm({ fee_bearer: 'merchant' }));
      expect(overridden.body).to.include({
        fee_bearer: 'merchant',
        amount_charged: 10_000,
        amount_net: 9_740,
        fee: 260,
      });
      const cdf = await shop.client.post(
        '/v1/payments',
        mm({ currency: 'CDF', amount: 1_250, fee_bearer: 'customer' }),
      );
      // 1% of 1250 = 12.5 → 13 (round half up)
      expect(cdf.body).to.include({ currency: 'CDF', fee: 13, amount_charged: 1_263, amount_net: 1_250 });
    });

    it('refuses amount_charged above the per-transaction limit of its currency with 422 amount-over-limit', async () => {
      const limited = await env.merchant({
        scope: 'payments',
        merchant: {
          fee_bearer: 'customer',
          fees: { USD: { percent_bps: 0, fixed: 100 } },
          per_tx_limit_usd: 10_000,
          per_tx_limit_cdf: 500,
        },
      });
      const before = await count('payments');
      const over = await limited.client.post('/v1/payments', mm({ amount: 9_901 }));
      expect(over.status).to.equal(422);
      expect(over.body.error).to.include({ code: 'amount-over-limit', param: 'amount' });
      const cdfOver = await limited.client.post('/v1/payments', mm({ currency: 'CDF', amount: 501 }));
      expect(cdfOver.status).to.equal(422);
      expect(await count('payments')).to.equal(before);
      const atLimit = await limited.client.post('/v1/payments', mm({ amount: 9_900 }));
      expect(atLimit.status).to.equal(201);
      expect(atLimit.body.amount_charged).to.equal(10_000);
    });

    it('applies the default limits to a merchant created without any: USD 1,000,000 and CDF 2,500,000,000 minor units', async () => {
      const plain = await env.merchant({ scope: 'payments' });
      const before = await count('payments');
      for (const [currency, amount] of [
        ['USD', 1_000_001],
        ['CDF', 2_500_000_001],
        ['USD', 1e12],
        ['CDF', 1e12],
      ] as const) {
        const res = await plain.client.post('/v1/payments', mm({ currency, amount }));
        expect(res.status, `${currency} ${amount}`).to.equal(422);
        expect(res.body.error).to.include({ code: 'amount-over-limit', param: 'amount' });
      }
      expect(await count('payments')).to.equal(before);
      expect((await plain.client.post('/v1/payments', mm({ amount: 1_000_000 }))).status).to.equal(201);
      expect((await plain.client.post('/v1/payments', mm({ currency: 'CDF', amount: 2_500_000_000 }))).status).to.equal(
        201,
      );
    });

    it('keeps every amount at most 10^12 minor units, even without a limit: the amount, and amount_charged with a customer-borne fee', async () => {
      const open = await env.merchant({
        scope: 'payments',
        merchant: { per_tx_limit_usd: null, fee_bearer: 'customer', fees: { USD: { percent_bps: 100, fixed: 0 } } },
      });
      const before = await count('payments');
      for (const amount of [1e12 + 1, 2 ** 53 - 1, 1e12]) {
        const res = await open.client.post('/v1/payments', mm({ amount }));
        expect(res.status, String(amount)).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param: 'amount' });
      }
      expect(await count('payments')).to.equal(before);
      const top = await open.client.post('/v1/payments', mm({ amount: 990_099_009_900 }));
      expect(top.status).to.equal(201);
      expect(top.body).to.include({ amount_charged: 999_999_999_999, amount_net: 990_099_009_900, fee: 9_900_990_099 });
    });

    it('refuses a reference already used by the merchant in this environment with 409 reference-conflict', async () => {
      const first = await shop.client.post('/v1/payments', mm({ reference: 'invoice-7' }));
      expect(first.status).to.equal(201);
      const before = await count('payments');
      const again = await shop.client.post('/v1/payments', mm({ reference: 'invoice-7', amount: 5_000 }));
      expect(again.status).to.equal(409);
      expect(again.body.error).to.include({ code: 'reference-conflict', param: 'reference' });
      expect(await count('payments')).to.equal(before);

      const other = await env.merchant({ scope: 'payments' });
      expect(
        (await other.client.post('/v1/payments', mm({ reference: 'invoice-7' }))).status,
        'another merchant',
      ).to.equal(201);
      const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'payments',
      });
      const live = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: c.body.api_key,
        secret: c.body.secret,
      });
      const card = {
        amount: 10_000,
        currency: 'USD',
        method: 'card',
        reference: 'invoice-7',
        customer_email: 'c@example.com',
        customer_name: 'C',
        return_url: 'https://shop.example/paid',
      };
      // a live card payment: no card connector is routed for live keys in this file
      const liveRes = await live.post('/v1/payments', card);
      expect(liveRes.status, 'same merchant, live environment').to.equal(422);
      expect(liveRes.body.error).to.include({ code: 'method-unavailable', param: 'method' });
    });

    describe("Idempotency-Key (atomic: written in the payment's own statement)", () => {
      const paymentsOf = async (reference: string) =>
        env.services.db('payments').where({ merchant_id: shop.merchant.id, reference });
      const keyRow = (key: string) =>
        env.services.db('idempotency_keys').where({ merchant_id: shop.merchant.id, key }).first();
      const outboxOf = (paymentId: string) =>
        env.services.db('outbox').whereRaw(`payload->>'paymentId' = ?`, [paymentId]);

      it('replays the stored answer byte for byte, creating one payment and one push', async () => {
        const key = randomUUID();
        const body = JSON.stringify(mm());
        const a = await shop.client.post('/v1/payments', body, { idempotencyKey: key });
        expect(a.status).to.equal(201);
        expect(a.headers.get('idempotent-replayed')).to.equal(null);
        for (const k of [key, key.toUpperCase()]) {
          const b = await shop.client.post('/v1/payments', body, { idempotencyKey: k });
          expect(b.status).to.equal(201);
          expect(b.text).to.equal(a.text);
          expect(b.headers.get('content-type')).to.equal(a.headers.get('content-type'));
          expect(b.headers.get('idempotent-replayed')).to.equal('true');
        }
        expect(await paymentsOf(JSON.parse(body).reference)).to.have.length(1);
        expect(await outboxOf(a.body.id)).to.have.length(1);
        const row = await keyRow(key);
        expect(row).to.include({
          status: 'completed',
          response_status: 201,
          method: 'POST',
          path: '/v1/payments',
          locked_until: null,
        });
        expect(Buffer.from(row.response_body).toString()).to.equal(a.text);
      });

      it('runs one of many simultaneous requests with one key; the others wait for it and get its answer', async () => {
        const key = randomUUID();
        const body = JSON.stringify(mm());
        const results = await Promise.all(
          Array.from({ length: 12 }, () => shop.client.post('/v1/payments', body, { idempotencyKey: key })),
        );
        for (const r of results) expect(r.status, r.text).to.equal(201);
        expect(new Set(results.map((r) => r.text)).size, 'one answer').to.equal(1);
        expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).to.have.length(11);
        const [p] = await paymentsOf(JSON.parse(body).reference);
        expect(p.id).to.equal(results[0].body.id);
        expect(await outboxOf(p.id)).to.have.length(1);
        expect(await env.services.db('payment_status_changes').where({ payment_id: p.id })).to.have.length(1);
      });

      it('answers 409 idempotency-conflict to the same key with other bodies, even at the same moment, and writes nothing for them', async () => {
        const key = randomUUID();
        const bodies = Array.from({ length: 6 }, () => mm());
        const results = await Promise.all(
          bodies.map((b) => shop.client.post('/v1/payments', b, { idempotencyKey: key })),
        );
        const won = results.filter((r) => r.status === 201);
        expect(won).to.have.length(1);
        for (const r of results.filter((x) => x.status !== 201)) {
          expect(r.status).to.equal(409);
          expect(r.body.error.code).to.equal('idempotency-conflict');
        }
        const references = bodies.map((b) => b.reference);
        const written = await env.services.db('payments').whereIn('reference', references);
        expect(written.map((p) => p.id)).to.deep.equal([won[0].body.id]);
        const again = await shop.client.post('/v1/payments', mm(), { idempotencyKey: key });
        expect(again.body.error.code).to.equal('idempotency-conflict');
      });

      it('stores and replays a 409 reference-conflict and a 422, with nothing written', async () => {
        const used = mm();
        expect((await shop.client.post('/v1/payments', used)).status).to.equal(201);
        const limited = await env.merchant({ scope: 'payments', merchant: { per_tx_limit_usd: 1_000 } });
        for (const [client, body, status, code] of [
          [shop.client, mm({ reference: used.reference, amount: 777 }), 409, 'reference-conflict'],
          [limited.client, mm({ amount: 5_000 }), 422, 'amount-over-limit'],
        ] as const) {
          const key = randomUUID();
          const before = await count('payments');
          const first = await client.post('/v1/payments', body, { idempotencyKey: key });
          expect(first.status).to.equal(status);
          expect(first.body.error.code).to.equal(code);
          const again = await client.post('/v1/payments', body, { idempotencyKey: key });
          expect(again.text, 'the stored bytes, request_id included').to.equal(first.text);
          expect(again.headers.get('idempotent-replayed')).to.equal('true');
          expect(await count('payments')).to.equal(before);
        }
      });

      it('answers by a used key before the route can refuse: a replay, or 409 idempotency-conflict, never a fresh 400', async () => {
        const key = randomUUID();
        const body = JSON.stringify(mm());
        const first = await shop.client.post('/v1/payments', body, { idempotencyKey: key });
        expect(first.status).to.equal(201);
        const invalid = await shop.client.post('/v1/payments', mm({ amount: -1 }), { idempotencyKey: key });
        expect(invalid.status).to.equal(409);
        expect(invalid.body.error.code).to.equal('idempotency-conflict');

        // the same request, after the merchant's terms changed so that it would now be refused
        const pricey = await env.merchant({
          scope: 'payments',
          merchant: { fees: { USD: { percent_bps: 0, fixed: 50 } } },
        });
        const small = JSON.stringify(mm({ amount: 100 }));
        const created = await pricey.client.post('/v1/payments', small, { idempotencyKey: key });
        expect(created.status).to.equal(201);
        await env.admin('PATCH', `/admin/merchants/${pricey.merchant.id}`, {
          fees: { USD: { percent_bps: 0, fixed: 500 }, CDF: { percent_bps: 0, fixed: 0 } },
        });
        clock.advance(CACHE_WAIT_MS);
        expect(
          (await pricey.client.post('/v1/payments', mm({ amount: 100 }))).status,
          'a new payment of 100 is refused now',
        ).to.equal(400);
        const again = await pricey.client.post('/v1/payments', small, { idempotencyKey: key });
        expect(again.status).to.equal(201);
        expect(again.text).to.equal(created.text);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
      });

      it('leaves the key free after a 400, and takes an expired key as new', async () => {
        const key = randomUUID();
        const bad = await shop.client.post('/v1/payments', mm({ amount: -1 }), { idempotencyKey: key });
        expect(bad.status).to.equal(400);
        expect(await keyRow(key)).to.equal(undefined);
        const first = await shop.client.post('/v1/payments', mm(), { idempotencyKey: key });
        expect(first.status).to.equal(201);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);

        await env.services
          .db('idempotency_keys')
          .where({ key })
          .update({ expires_at: new Date(Date.now() - 1000) });
        const later = await shop.client.post('/v1/payments', mm(), { idempotencyKey: key });
        expect(later.status).to.equal(201);
        expect(later.headers.get('idempotent-replayed')).to.equal(null);
        expect(later.body.id).not.to.equal(first.body.id);
        expect(Buffer.from((await keyRow(key)).response_body).toString()).to.equal(later.text);
      });

      it('answers 409 idempotency-in-progress to a key held in_progress for this very request, until its lock passes', async () => {
        // such a row is left by a claim-first holder that died (say, a web process of an earlier release)
        const key = randomUUID();
        const body = JSON.stringify(mm());
        const { requestHash } = await import('../../api/pipeline/idempotency');
        await env.services.db('idempotency_keys').insert({
          merchant_id: shop.merchant.id,
          environment: 'test',
          key,
          method: 'POST',
          path: '/v1/payments',
          request_hash: requestHash('POST', '/v1/payments', Buffer.from(body)),
          status: 'in_progress',
          locked_until: new Date(Date.now() + 60_000),
          expires_at: new Date(Date.now() + 3600_000),
        });
        const held = await shop.client.post('/v1/payments', body, { idempotencyKey: key });
        expect(held.status).to.equal(409);
        expect(held.body.error.code).to.equal('idempotency-in-progress');
        expect(held.headers.get('retry-after')).to.equal('1');
        expect(await paymentsOf(JSON.parse(body).reference)).to.have.length(0);
        // its lock has passed (the holder died): the same request takes the key over
        await env.services
          .db('idempotency_keys')
          .where({ key })
          .update({ locked_until: new Date(Date.now() - 1000) });
        const other = await shop.client.post('/v1/payments', mm(), { idempotencyKey: key });
        expect(other.body.error.code, 'only the same request may take over').to.equal('idempotency-conflict');
        const taken = await shop.client.post('/v1/payments', body, { idempotencyKey: key });
        expect(taken.status).to.equal(201);
        expect(await paymentsOf(JSON.parse(body).reference)).to.have.length(1);
      });
    });

    describe('field rules: 400 validation-failed naming the field, nothing written', () => {
      const cases: [string, Record<string, unknown>, string][] = [
        ['a missing amount', { amount: undefined }, 'amount'],
        ['a zero amount', { amount: 0 }, 'amount'],
        ['a negative amount', { amount: -100 }, 'amount'],
        ['a fractional amount', { amount: 10.5 }, 'amount'],
        ['an amount as text', { amount: '100' }, 'amount'],
        ['an amount beyond the safe integers', { amount: 2 ** 53 }, 'amount'],
        ['an amount above 10^12 minor units', { amount: 1e12 + 1 }, 'amount'],
        ['an amount that does not cover the merchant-borne fee', { amount: 10 }, 'amount'],
        ['a missing currency', { currency: undefined }, 'currency'],
        ['an unknown currency', { currency: 'EUR' }, 'currency'],
        ['a lower-case currency', { currency: 'usd' }, 'currency'],
        ['a missing method', { method: undefined }, 'method'],
        ['an unknown method', { method: 'cash' }, 'method'],
        ['a missing operator for mobile money', { operator: undefined }, 'operator'],
        ['an unknown operator', { operator: 'mpesa' }, 'operator'],
        ['a missing phone for mobile money', { phone: undefined }, 'phone'],
        ['a phone with a plus sign', { phone: '+243990000001' }, 'phone'],
        ['a phone of another country', { phone: '244990000001' }, 'phone'],
        ['a phone too short', { phone: '24399000001' }, 'phone'],
        ['a phone as a number', { phone: 243990000001 }, 'phone'],
        ['a missing reference', { reference: undefined }, 'reference'],
        ['an empty reference', { reference: '' }, 'reference'],
        ['a reference of 256 characters', { reference: 'r'.repeat(256) }, 'reference'],
        ['a description of 1001 characters', { description: 'd'.repeat(1001) }, 'description'],
        [
          'metadata of 21 keys',
          { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) },
          'metadata',
        ],
        ['a metadata value of 501 characters', { metadata: { note: 'x'.repeat(501) } }, 'metadata'],
        ['a metadata value that is an object', { metadata: { nested: { a: 1 } } }, 'metadata'],
        ['a metadata value that is null', { metadata: { gone: null } }, 'metadata'],
        ['metadata as an array', { metadata: ['a'] }, 'metadata'],
        ['a metadata key of 41 characters', { metadata: { ['k'.repeat(41)]: 'v' } }, 'metadata'],
        ['an empty metadata key', { metadata: { '': 'v' } }, 'metadata'],
        ['an invalid customer e-mail', { customer_email: 'not-an-email' }, 'customer_email'],
        ['a return_url that is not http(s)', { return_url: 'ftp://shop.example/back' }, 'return_url'],
        ['a return_url that is not a URL', { return_url: 'back to shop' }, 'return_url'],
        ['an unknown fee bearer', { fee_bearer: 'platform' }, 'fee_bearer'],
        ['an unknown field', { colour: 'red' }, 'colour'],
        [
          'a card payment without customer_email',
          {
            method: 'card',
            operator: undefined,
            phone: undefined,
            customer_name: 'A',
            return_url: 'https://shop.example/r',
          },
          'customer_email',
        ],
        [
          'a card payment without customer_name',
          { method: 'card', customer_email: 'a@shop.example', return_url: 'https://shop.example/r' },
          'customer_name',
        ],
        [
          'a card payment without return_url',
          { method: 'card', customer_email: 'a@shop.example', customer_name: 'A' },
          'return_url',
        ],
      ];
      for (const [what, change, param] of cases) {
        it(`refuses ${what} (${param})`, async () => {
          const before = await count('payments');
          const body: Record<string, unknown> = mm(change);
          for (const k of Object.keys(change)) if (change[k] === undefined) delete body[k];
          const res = await shop.client.post('/v1/payments', body);
          expect(res.status, JSON.stringify(res.body)).to.equal(400);
          expect(res.body.error).to.include({ code: 'validation-failed', param });
          expect(await count('payments')).to.equal(before);
        });
      }

      it('refuses a body that is not a JSON object', async () => {
        const res = await shop.client.post('/v1/payments', '[1,2]');
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param: 'body' });
      });

      it('accepts the limits themselves: 20 metadata keys of up to 40 characters, 500-character values, 255-character reference', async () => {
        const metadata = Object.fromEntries(
          Array.from({ length: 20 }, (_, i) => [`k${i}`.padEnd(i === 0 ? 1 : 40, 'k'), 'x'.repeat(500)]),
        );
        const res = await shop.client.post('/v1/payments', mm({ metadata, reference: 'r'.repeat(255) }));
        expect(res.status).to.equal(201);
        expect(Object.keys(res.body.metadata)).to.have.length(20);
      });
    });

    it('checks the operator prefix in live (400 operator-mismatch on phone), not for sandbox numbers in test; live without a connector is 422', async () => {
      const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'payments',
      });
      const live = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: c.body.api_key,
        secret: c.body.secret,
      });
      const before = await count('payments');
      for (const [operator, phone] of [
        ['vodacom', '243970000000'],
        ['airtel', '243810000000'],
        ['orange', '243900000000'],
        ['africell', '243840000000'],
        ['vodacom', '243990000001'],
      ]) {
        const res = await live.post('/v1/payments', mm({ operator, phone }));
        expect(res.status, `${operator} ${phone}`).to.equal(400);
        expect(res.body.error).to.include({ code: 'operator-mismatch', param: 'phone' });
      }
      expect(await count('payments')).to.equal(before);
      // the right prefix gets as far as the routing table: no live connector is configured in this file
      for (const [operator, phone] of [
        ['vodacom', '243830000000'],
        ['airtel', '243970000000'],
        ['orange', '243890000000'],
        ['africell', '243910000000'],
      ]) {
        const res = await live.post('/v1/payments', mm({ operator, phone }));
        expect(res.status, `${operator} ${phone}`).to.equal(422);
        expect(res.body.error).to.include({ code: 'operator-unavailable', param: 'operator' });
      }
      expect(await count('payments')).to.equal(before);
      for (const operator of ['vodacom', 'airtel', 'orange', 'africell']) {
        const res = await shop.client.post('/v1/payments', mm({ operator, phone: '243990000002' }));
        expect(res.status).to.equal(201);
        expect(res.body.provider).to.equal(`${operator}-sandbox`);
      }
    });

    it('creates a card payment pending, with its checkout_url (the card flow: test/integration/cards.test.ts)', async () => {
      const res = await shop.client.post('/v1/payments', {
        amount: 2_500,
        currency: 'USD',
        method: 'card',
        reference: `card-${randomUUID()}`,
        customer_email: 'client@shop.example',
        customer_name: 'Client',
        return_url: 'https://shop.example/return',
      });
      expect(res.status).to.equal(201);
      expect(res.body).to.include({
        status: 'pending',
        method: 'card',
        provider: 'card-sandbox',
        card: null,
        checkout_url: `${env.baseUrl}/checkout/${res.body.id}`,
      });
    });

    it('needs a key whose scope allows it (403 insufficient-scope for read)', async () => {
      const reader = await env.merchant({ scope: 'read' });
      const res = await reader.client.post('/v1/payments', mm());
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('insufficient-scope');
    });
  });

  describe('GET /v1/payments/{id}', () => {
    it('returns the merchant’s own payment, and 404 for anyone else’s, another environment, or a malformed id', async () => {
      const created = (await shop.client.post('/v1/payments', mm())).body;
      const reader = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'test',
        scope: 'read',
      });
      const read = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: reader.body.api_key,
        secret: reader.body.secret,
      });
      const own = await read.get(`/v1/payments/${created.id}`);
      expect(own.status).to.equal(200);
      expect(own.body).to.deep.equal(created);

      const stranger = await env.merchant({ scope: 'full' });
      const live = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'read',
      });
      const liveClient = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: live.body.api_key,
        secret: live.body.secret,
      });
      for (const [client, id] of [
        [stranger.client, created.id],
        [liveClient, created.id],
        [read, 'pay_00000000-0000-4000-8000-000000000000'],
        [read, 'pay_nope'],
        [read, created.id.toUpperCase()],
      ] as const) {
        const res = await client.get(`/v1/payments/${id}`);
        expect(res.status, id).to.equal(404);
        expect(res.body.error.code).to.equal('not-found');
      }
    });
  });

  describe('GET /v1/payments', () => {
    let lister: MerchantFixture;
    const ids: string[] = [];
    before(async () => {
      lister = await env.merchant({ scope: 'payments' });
      for (let i = 0; i < 25; i++) {
        const res = await lister.client.post(
          '/v1/payments',
          mm({ reference: `list-${i}`, phone: i % 5 === 0 ? '243990000002' : '243990000001' }),
        );
        ids.push(res.body.id);
      }
      // many payments in one second: the order must still be total and stable
      await env.services.db('payments').where({ merchant_id: lister.merchant.id }).update({ created: 1_763_700_000 });
      await env.services.db('payments').whereIn('id', ids.slice(0, 5)).update({ created: 1_763_699_999 });
      await env.services.db('payments').whereIn('id', ids.slice(20)).update({ status: 'succeeded' });
    });

    const expectedOrder = async (where: Record<string, unknown> = {}) =>
      (
        await env.services
          .db('payments')
          .where({ merchant_id: lister.merchant.id, ...where })
          .orderBy([
            { column: 'created', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .select('id')
      ).map((r) => r.id);

    it('pages newest first, 20 by default, with has_more and next_cursor', async () => {
      const res = await lister.client.get('/v1/payments');
      expect(res.status).to.equal(200);
      expect(res.body.data).to.have.length(20);
      expect(res.body.has_more).to.equal(true);
      const order = await expectedOrder();
      expect(res.body.data.map((p: any) => p.id)).to.deep.equal(order.slice(0, 20));
      expect(res.body.next_cursor).to.equal(`1763700000.${order[19]}`);
      expect(res.body.data[0].object).to.equal('payment');
    });

    it('walks every payment exactly once across pages cut inside one second', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: any = await lister.client.get(`/v1/payments?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).to.equal(200);
        seen.push(...res.body.data.map((p: any) => p.id));
        cursor = res.body.next_cursor;
        expect(res.body.has_more).to.equal(cursor !== null);
        pages++;
      } while (cursor);
      expect(pages).to.equal(4);
      expect(seen).to.deep.equal(await expectedOrder());
    });

    it('takes a bare Unix timestamp as cursor: everything created before that second', async () => {
      const res = await lister.client.get('/v1/payments?cursor=1763700000&limit=100');
      expect(res.body.data.map((p: any) => p.id).sort()).to.deep.equal(ids.slice(0, 5).sort());
      expect(res.body).to.include({ has_more: false, next_cursor: null });
    });

    it('filters by reference and by status', async () => {
      const byRef = await lister.client.get('/v1/payments?reference=list-3');
      expect(byRef.body.data.map((p: any) => p.id)).to.deep.equal([ids[3]]);
      const byStatus = await lister.client.get('/v1/payments?status=succeeded&limit=100');
      expect(byStatus.body.data.map((p: any) => p.id).sort()).to.deep.equal(ids.slice(20).sort());
      expect(byStatus.body.has_more).to.equal(false);
      const none = await lister.client.get('/v1/payments?status=refunded');
      expect(none.body).to.deep.equal({ object: 'list', data: [], has_more: false, next_cursor: null });
    });

    it('lists only the merchant’s own payments of the key’s environment', async () => {
      const other = await env.merchant({ scope: 'payments' });
      await other.client.post('/v1/payments', mm());
      const res = await lister.client.get('/v1/payments?limit=100');
      expect(res.body.data).to.have.length(25);
      expect(res.body.data.every((p: any) => ids.includes(p.id))).to.equal(true);
      const live = await env.admin('POST', `/admin/merchants/${lister.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'read',
      });
      const liveClient = new (shop.client.constructor as any)({
        baseUrl: env.baseUrl,
        apiKey: live.body.api_key,
        secret: live.body.secret,
      });
      expect((await liveClient.get('/v1/payments')).body.data).to.deep.equal([]);
    });

    const bad: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=', 'limit'],
      ['status=paid', 'status'],
      ['cursor=yesterday', 'cursor'],
      ['cursor=1763700000.pay_x', 'cursor'],
      ['colour=red', 'colour'],
      ['limit=5&limit=6', 'limit'],
    ];
    for (const [query, param] of bad) {
      it(`refuses ?${query} with 400 validation-failed on ${param}`, async () => {
        const res = await lister.client.get(`/v1/payments?${query}`);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
      });
    }
  });
});
