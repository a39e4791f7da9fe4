import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { aMerchant, startMoneyEnv, waitFor, waitForStatus } from '../helpers/money';
import { aLink, formToken, getPage, payByPhone, submit } from '../helpers/links';
import { startPawapaySimulator, type PawapaySimulator } from '../../scripts/simulators/pawapay/simulator';
import { PHONE_PROMPTS, SUBMITS_PER_IP } from '../../api/checkout/links';

const LINK_ID = /^plink_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * Payment links (docs/decisions.md#payment-links): the API routes and their errors
 * (every answer checked against the OpenAPI document by the test client), and payments made
 * through the hosted page's form as a browser without JavaScript posts it, through the sandbox
 * provider and the real pools.
 */
describe('payment links', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let shop: MerchantFixture;
  let linkCount = 0;
  const uniquePhone = () => `2439900${String(10_000 + ++linkCount * 7).padStart(5, '0')}`;

  // live vodacom is served by pawaPay (its simulator): a live link's payment goes through the live routing
  let pawapay: PawapaySimulator;

  before(async () => {
    pawapay = await startPawapaySimulator({ token: 'links-token', callbackUrl: null });
    // one trusted proxy: each form comes from a client address of its own (the per-IP limit has its own test)
    env = await startMoneyEnv({
      SANDBOX_CALLBACK_DELAY_MS: '50',
      TRUSTED_PROXIES: '1',
      LIVE_VODACOM: 'pawapay',
      PAWAPAY_URL: pawapay.url,
      PAWAPAY_API_TOKEN: 'links-token',
    });
    shop = await aMerchant(env, { name: 'Kin Shop' }, 'payments');
  });
  after(async () => {
    await env.close();
    await pawapay.close();
  });

  describe('API', () => {
    it('creates a link (201) with its url, defaults and Idempotency-Key replay', async () => {
      const key = randomUUID();
      const body = { amount: 2_500, currency: 'USD', description: 'Robe wax', metadata: { sku: 'wax-1' } };
      const res = await shop.client.post('/v1/payment_links', body, { idempotencyKey: key });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const l = res.body;
      expect(l.id).to.match(LINK_ID);
      expect(l).to.deep.equal({
        id: l.id,
        object: 'payment_link',
        url: `${env.baseUrl}/pay/${l.id}`,
        active: true,
        environment: 'test',
        currency: 'USD',
        amount: 2_500,
        min_amount: null,
        max_amount: null,
        description: 'Robe wax',
        methods: ['mobile_money', 'card'],
        single_use: false,
        expires_at: null,
        return_url: null,
        metadata: { sku: 'wax-1' },
        created: l.created,
        deactivated: null,
      });
      const again = await shop.client.post('/v1/payment_links', body, { idempotencyKey: key });
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(l);
      expect(
        await env.services
          .db('payment_links')
          .where({ merchant_id: shop.merchant.id, description: 'Robe wax', currency: 'USD' })
          .whereRaw(`metadata->>'sku' = 'wax-1'`),
      ).to.have.length(1);
    });

    it('requires an Idempotency-Key, as POST /v1/payments', async () => {
      const res = await shop.client.post(
        '/v1/payment_links',
        { currency: 'USD', description: 'x' },
        { idempotencyKey: false },
      );
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('idempotency-key-required');
    });

    for (const [name, body, param] of [
      ['an amount with bounds', { amount: 100, min_amount: 50, currency: 'USD', description: 'x' }, 'min_amount'],
      ['bounds out of order', { min_amount: 500, max_amount: 100, currency: 'USD', description: 'x' }, 'max_amount'],
      ['an expiry in the past', { currency: 'USD', description: 'x', expires_at: 1_000_000 }, 'expires_at'],
      ['no method', { currency: 'USD', description: 'x', methods: [] }, 'methods'],
      ['an unknown method', { currency: 'USD', description: 'x', methods: ['cash'] }, 'methods'],
      ['no description', { currency: 'USD' }, 'description'],
      ['a currency it does not take', { currency: 'EUR', description: 'x' }, 'currency'],
      [
        'a return_url that is not http(s)',
        { currency: 'USD', description: 'x', return_url: 'ftp://x.example' },
        'return_url',
      ],
    ] as const) {
      it(`refuses ${name} (400 validation-failed, param ${param})`, async () => {
        const res = await shop.client.post('/v1/payment_links', body);
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        expect(res.body.error.code).to.equal('validation-failed');
        expect(res.body.error.param).to.match(new RegExp(`^${param}`));
      });
    }

    it('needs the payments scope to create, read to read', async () => {
      const reader = await aMerchant(env, {}, 'read');
      const res = await reader.client.post('/v1/payment_links', { currency: 'USD', description: 'x' });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('insufficient-scope');
      expect((await reader.client.get('/v1/payment_links')).status).to.equal(200);
    });

    it('reads a link, 404 for another merchant, a malformed or unknown id', async () => {
      const l = await aLink(shop.client);
      const got = await shop.client.get(`/v1/payment_links/${l.id}`);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.equal(l);
      const other = await aMerchant(env, {}, 'read');
      for (const [client, id] of [
        [other.client, l.id],
        [shop.client, 'plink_nope'],
        [shop.client, `plink_${randomUUID()}`],
      ] as const) {
        const res = await client.get(`/v1/payment_links/${id}`);
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('not-found');
      }
    });

    it("lists links newest first with a cursor, only the merchant's own", async () => {
      const m = await aMerchant(env, {}, 'payments');
      const made = [];
      for (let i = 0; i < 5; i++) made.push((await aLink(m.client, { description: `link ${i}` })).id);
      const first = await m.client.get('/v1/payment_links?limit=3');
      expect(first.status).to.equal(200);
      expect(first.body.has_more).to.equal(true);
      const second = await m.client.get(
        `/v1/payment_links?limit=3&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      );
      expect(second.body.has_more).to.equal(false);
      const ids = [...first.body.data, ...second.body.data].map((l: any) => l.id);
      expect(new Set(ids)).to.deep.equal(new Set(made));
      const created = [...first.body.data, ...second.body.data].map((l: any) => l.created);
      expect(created).to.deep.equal([...created].sort((a, b) => b - a));
      expect((await m.client.get('/v1/payment_links?limit=0')).body.error).to.include({
        code: 'validation-failed',
        param: 'limit',
      });
    });

    it('deactivates a link: inactive in the API, 410 on its page and for payments, deactivating again answers it', async () => {
      const l = await aLink(shop.client);
      const page = await getPage(l.url);
      const res = await shop.client.post(`/v1/payment_links/${l.id}/deactivate`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.include({ id: l.id, active: false });
      expect(res.body.deactivated).to.be.a('number');
      // the same signed request within its second would be a replay (409 request-replayed)
      await new Promise((r) => setTimeout(r, 1_100));
      const again = await shop.client.post(`/v1/payment_links/${l.id}/deactivate`);
      expect(again.status).to.equal(200);
      expect(again.body.deactivated).to.equal(res.body.deactivated);
      const gone = await getPage(l.url, { 'Accept-Language': 'en' });
      expect(gone.status).to.equal(410);
      expect(gone.html).to.include('This payment link is no longer active').and.include('deactivated');
      // a form opened before: its submission makes no payment
      const late = await submit(env.baseUrl, l.id, {
        token: formToken(page.html, 'mobile_money'),
        method: 'mobile_money',
        phone: '243990000001',
      });
      expect(late.status).to.equal(410);
      expect(await env.services.db('payments').where({ payment_link: l.id })).to.have.length(0);
    });

    it('an expired link answers 410: its page, and link-inactive on deactivation', async () => {
      const l = await aLink(shop.client, { expires_at: Math.floor(Date.now() / 1000) + 2 });
      expect((await getPage(l.url)).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 2_100));
      expect((await shop.client.get(`/v1/payment_links/${l.id}`)).body.active).to.equal(false);
      const page = await getPage(l.url);
      expect(page.status).to.equal(410);
      expect(page.html).to.include('Ce lien de paiement a expiré');
      const res = await shop.client.post(`/v1/payment_links/${l.id}/deactivate`);
      expect(res.status).to.equal(410);
      expect(res.body.error.code).to.equal('link-inactive');
    });
  });

  describe('payments through the page', () => {
    it('pays by mobile money: an ordinary payment with payment_link and a generated reference, listed by ?payment_link=', async () => {
      const l = await aLink(shop.client, { metadata: { sku: 'wax-1' }, return_url: 'https://shop.example/merci' });
      const phone = uniquePhone();
      const res = await payByPhone(
        env.baseUrl,
        l.id,
        `+243 ${phone.slice(3, 5)} ${phone.slice(5, 8)} ${phone.slice(8)}`,
      );
      expect(res.status, res.html).to.equal(303);
      expect(res.location).to.match(new RegExp(`^/pay/${l.id}/attempts/[^/?]+\\?lang=en$`));
      expect(res.location, 'no phone number or payment id in the URL')
        .not.to.include(phone.slice(3))
        .and.not.include('pay_');
      const [row] = await env.services.db('payments').where({ payment_link: l.id });
      expect(row).to.include({
        method: 'mobile_money',
        phone,
        operator: 'airtel',
        amount: 2_500,
        reference: `${l.id}-1`,
        description: 'Robe wax',
      });
      const p = await waitForStatus(shop.client, row.id, 'succeeded');
      expect(p).to.include({ payment_link: l.id, reference: `${l.id}-1` });
      expect(p.metadata).to.deep.equal({ sku: 'wax-1' });
      const listed = await shop.client.get(`/v1/payments?payment_link=${l.id}`);
      expect(listed.body.data.map((x: any) => x.id)).to.deep.equal([row.id]);
      expect((await shop.client.get(`/v1/payments?payment_link=nope`)).body.error).to.include({
        code: 'validation-failed',
        param: 'payment_link',
      });
      // the API's own payments carry payment_link null
      const api = await shop.client.post('/v1/payments', {
        amount: 100,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `r-${randomUUID()}`,
      });
      expect(api.body.payment_link).to.equal(null);
      // the events carry it on the payment object
      const events = await waitFor(shop.client, '/v1/events?type=payment.succeeded', (b) =>
        b.data.some((e: any) => e.data.object.id === row.id),
      );
      expect(events.data.find((e: any) => e.data.object.id === row.id).data.object.payment_link).to.equal(l.id);
      // the status page: the receipt, the masked number nowhere in clear
      const done = await getPage(`${env.baseUrl}${res.location}`);
      expect(done.status).to.equal(200);
      expect(done.html).to.include('Payment succeeded').and.include('25.00 USD').and.include(p.provider_ref);
      expect(done.html).to.include('https://shop.example/merci?payment_link=');
      expect(done.html).not.to.include(phone.slice(3));
    });

    it('a double submit or a reload of the form makes one payment', async () => {
      const l = await aLink(shop.client);
      const page = await getPage(l.url);
      const fields = {
        token: formToken(page.html, 'mobile_money'),
        method: 'mobile_money',
        phone: uniquePhone(),
        operator: '',
      };
      const answers = await Promise.all([submit(env.baseUrl, l.id, fields), submit(env.baseUrl, l.id, fields)]);
      const again = await submit(env.baseUrl, l.id, fields);
      for (const a of [...answers, again]) expect(a.status, a.html).to.equal(303);
      expect(new Set([...answers, again].map((a) => a.location)).size).to.equal(1);
      expect(await env.services.db('payments').where({ payment_link: l.id })).to.have.length(1);
    });

    it(`at most ${PHONE_PROMPTS} push prompts per phone number per 10 minutes, across links; a clear message past it`, async () => {
      const phone = uniquePhone();
      const spellings = [phone, `0${phone.slice(3)}`, `+${phone}`, `00${phone}`];
      const links = [await aLink(shop.client), await aLink(shop.client)];
      const answers = [];
      for (let i = 0; i < spellings.length; i++)
        answers.push(await payByPhone(env.baseUrl, links[i % 2].id, spellings[i]));
      expect(answers.map((a) => a.status)).to.deep.equal([303, 303, 303, 429]);
      expect(answers[3].html).to.include('Too many payment requests to this number: at most 3 in 10 minutes');
      expect(Number(answers[3].headers.get('retry-after'))).to.be.within(1, 600);
      const made = await env.services.db('payments').whereIn(
        'payment_link',
        links.map((l) => l.id),
      );
      expect(made).to.have.length(3);
      // another number is not held back
      expect((await payByPhone(env.baseUrl, links[0].id, uniquePhone())).status).to.equal(303);
    });

    it(`at most ${SUBMITS_PER_IP} submissions a minute per client IP`, async () => {
      const l = await aLink(shop.client);
      const token = formToken((await getPage(l.url)).html, 'mobile_money');
      const statuses = [];
      // an invalid phone: counted, no payment, no prompt
      for (let i = 0; i <= SUBMITS_PER_IP; i++)
        statuses.push(
          (
            await submit(
              env.baseUrl,
              l.id,
              { token, method: 'mobile_money', phone: '12', lang: 'en' },
              { 'X-Forwarded-For': '10.8.0.1' },
            )
          ).status,
        );
      expect(statuses).to.deep.equal([...Array(SUBMITS_PER_IP).fill(400), 429]);
      const last = await submit(
        env.baseUrl,
        l.id,
        { token, method: 'mobile_money', phone: '12', lang: 'en' },
        { 'X-Forwarded-For': '10.8.0.1' },
      );
      expect(last.html).to.include('Too many attempts. Try again in 1 min.');
    });

    it('an open amount: within its bounds, refused outside them with the form again', async () => {
      const l = await aLink(shop.client, { amount: undefined, min_amount: 500, max_amount: 5_000 });
      expect(l.amount).to.equal(null);
      const low = await payByPhone(env.baseUrl, l.id, uniquePhone(), { amount: '4.99' });
      expect(low.status).to.equal(400);
      expect(low.html).to.include('The amount is outside the limits shown').and.include('aria-invalid="true"');
      const junk = await payByPhone(env.baseUrl, l.id, uniquePhone(), { amount: 'abc' });
      expect(junk.status).to.equal(400);
      const ok = await payByPhone(env.baseUrl, l.id, uniquePhone(), { amount: '12,50' });
      expect(ok.status, ok.html).to.equal(303);
      expect((await env.services.db('payments').where({ payment_link: l.id }).first()).amount).to.equal(1_250);
    });

    it('refuses a form without a valid token, with a token of another link, or posted from another origin', async () => {
      const [a, b] = [await aLink(shop.client), await aLink(shop.client)];
      const tokenOfB = formToken((await getPage(b.url)).html, 'mobile_money');
      const tokenOfA = formToken((await getPage(a.url)).html, 'mobile_money');
      const base = { method: 'mobile_money', phone: uniquePhone(), operator: '' };
      expect((await submit(env.baseUrl, a.id, { ...base, token: 'x' })).status).to.equal(403);
      expect((await submit(env.baseUrl, a.id, { ...base, token: tokenOfB })).status).to.equal(403);
      expect(
        (await submit(env.baseUrl, a.id, { ...base, token: tokenOfA }, { Origin: 'https://evil.example' })).status,
      ).to.equal(403);
      expect(await env.services.db('payments').whereIn('payment_link', [a.id, b.id])).to.have.length(0);
    });

    it('a single-use link is used up once a payment through it succeeded: inactive, 410', async () => {
      const l = await aLink(shop.client, { single_use: true });
      const res = await payByPhone(env.baseUrl, l.id, uniquePhone());
      expect(res.status).to.equal(303);
      const row = await env.services.db('payments').where({ payment_link: l.id }).first();
      await waitForStatus(shop.client, row.id, 'succeeded');
      expect((await shop.client.get(`/v1/payment_links/${l.id}`)).body.active).to.equal(false);
      const page = await getPage(l.url, { 'Accept-Language': 'en' });
      expect(page.status).to.equal(410);
      expect(page.html).to.include('This payment link has already been paid');
      expect((await shop.client.post(`/v1/payment_links/${l.id}/deactivate`)).body.error.code).to.equal(
        'link-inactive',
      );
    });

    it('the decline number fails, in plain words, with try again', async () => {
      const l = await aLink(shop.client);
      const res = await payByPhone(env.baseUrl, l.id, '243990000002');
      const row = await env.services.db('payments').where({ payment_link: l.id }).first();
      await waitForStatus(shop.client, row.id, 'failed');
      const page = await getPage(`${env.baseUrl}${res.location}`);
      expect(page.html).to.include('Your mobile money balance is too low').and.include(`href="/pay/${l.id}?lang=en"`);
    });

    it("a suspended merchant's links take no payment (410)", async () => {
      const m = await aMerchant(env, {}, 'payments');
      const l = await aLink(m.client);
      const page = await getPage(l.url);
      expect((await env.admin('PATCH', `/admin/merchants/${m.merchant.id}`, { status: 'suspended' })).status).to.equal(
        200,
      );
      expect((await getPage(l.url)).status).to.equal(410);
      const late = await submit(env.baseUrl, l.id, {
        token: formToken(page.html, 'mobile_money'),
        method: 'mobile_money',
        phone: uniquePhone(),
      });
      expect(late.status).to.equal(410);
      expect(await env.services.db('payments').where({ payment_link: l.id })).to.have.length(0);
    });

    it('shows a closed operator as unavailable, and a submission for it says so', async () => {
      const l = await aLink(shop.client);
      expect((await env.admin('PUT', '/admin/operators/orange', { collection: 'closed' })).status).to.equal(200);
      try {
        const page = await getPage(l.url, { 'Accept-Language': 'en' });
        expect(page.html).to.include('<option value="orange" disabled>Orange Money (unavailable)</option>');
        expect(page.html).to.include('<option value="vodacom">Vodacom M-Pesa</option>');
        const res = await payByPhone(env.baseUrl, l.id, '0840000001', { operator: 'orange' });
        expect(res.status).to.equal(422);
        expect(res.html).to.include('This operator is unavailable for now');
        expect(await env.services.db('payments').where({ payment_link: l.id })).to.have.length(0);
      } finally {
        await env.admin('PUT', '/admin/operators/orange', { collection: 'operational' });
      }
    });

    it('a link of a live key creates a live payment through the live routing, checking the operator prefix', async () => {
      const c = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'payments',
      });
      const live = env.client(c.body);
      const l = await aLink(live, { return_url: 'https://shop.example/ok' });
      expect(l.environment).to.equal('live');
      const mismatch = await payByPhone(env.baseUrl, l.id, '0812345678', { operator: 'airtel' });
      expect(mismatch.status).to.equal(400);
      expect(mismatch.html).to.include('This number does not belong to the chosen operator');
      const res = await payByPhone(env.baseUrl, l.id, '0812345678');
      expect(res.status, res.html).to.equal(303);
      const row = await env.services.db('payments').where({ payment_link: l.id }).first();
      expect(row).to.include({ environment: 'live', operator: 'vodacom', phone: '243812345678', provider: 'pawapay' });
      // the push reached pawaPay as a deposit of this payment
      await eventually(async () => pawapay.transactions().some((t) => t.id === row.id.slice(4)), 15_000);
      // an operator no live connector serves is shown unavailable, and refused
      const africell = await payByPhone(env.baseUrl, l.id, '0900000001', { operator: 'africell' });
      expect(africell.status).to.equal(422);
    });
  });
});
