import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../shared/clock';
import { cardPaymentKind } from '../../shared/cards/kind';
import { createContext, type ServiceContext } from '../../shared/context';
import { MAX_ASK_INTERVAL_MS, sweepOpen } from '../../shared/operations/sweep';
import { purgeCardAttempts } from '../../shared/retention';
import { signCallback } from '../../shared/providers/signature';
import {
  CARD_SECRET,
  createCardPayment,
  cardPaymentBody,
  pay,
  paymentRow,
  startCardEnv,
  tokenFor,
  VAULT_KEY,
  waitForRow,
  type CardTestEnv,
} from '../helpers/cards';
import type { MerchantFixture } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { SANDBOX_SECRET } from '../helpers/money';

/**
 * Card payments end to end over HTTP, without a browser (the browser flows are test/e2e): the
 * web app, the sandbox vault and acquirer (their own processes and origins), card-charge and
 * callback-reconciler as real processes. Each test pays from its own client IP (X-Forwarded-For
 * through one trusted proxy), so the per-IP limit of POST /pay is counted per test.
 */
describe('card payments (hosted checkout, sandbox vault and acquirer, real workers)', function () {
  this.timeout(60_000);
  let c: CardTestEnv;
  let shop: MerchantFixture;
  // a minute each: no test runs into them by being slow; the ones about them move the clock
  const TOKEN_TTL_MS = 60_000;
  const THREE_DS_WINDOW_MS = 60_000;

  before(async () => {
    c = await startCardEnv({
      TRUSTED_PROXIES: '1',
      CARD_TOKEN_TTL_MS: String(TOKEN_TTL_MS),
      CARD_3DS_WINDOW_MS: String(THREE_DS_WINDOW_MS),
      RETENTION_INTERVAL_MS: '200',
    });
    shop = await c.env.merchant({
      scope: 'full',
      merchant: { name: 'Kin Café & Co', fees: { USD: { percent_bps: 250, fixed: 10 } } },
    });
  });
  after(async () => {
    await c.env.close();
  });

  let ipCounter = 1;
  const newIp = () => ({ 'X-Forwarded-For': `198.51.100.${ipCounter++}` });
  const base = () => c.env.baseUrl;
  const page = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(base() + path, { headers, redirect: 'manual' });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  const history = async (id: string) =>
    (await c.env.services.db('payment_status_changes').where({ payment_id: id }).orderBy('id')).map(
      (h) => `${h.from_status ?? '∅'}→${h.to_status} (${h.reason})`,
    );
  const events = (id: string) => c.env.services.db('events').where({ object_id: id }).orderBy('created');
  const credits = (id: string) =>
    c.env.services.db('ledger_transactions').where({ kind: 'payment_credit', reference_id: id });
  async function paid(number: string, over: Record<string, unknown> = {}) {
    const p = await createCardPayment(shop.client, over);
    const { token } = await tokenFor(c.vaultUrl, p.id, number);
    const res = await pay(base(), p.id, { token }, newIp());
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    return p;
  }

  describe('creation (docs/decisions.md#cards-hosted-checkout)', () => {
    it('answers 201 pending with checkout_url, the acquirer as provider, card null', async () => {
      const p = await createCardPayment(shop.client);
      expect(p).to.include({
        status: 'pending',
        method: 'card',
        provider: 'card-sandbox',
        provider_ref: null,
        amount_charged: 2_500,
        card: null,
      });
      expect(p.checkout_url).to.equal(`${base()}/checkout/${p.id}`);
      const row = await paymentRow(c.env, p.id);
      // the 30-minute checkout window
      expect(row.window_ends_at.getTime() - row.created_at.getTime()).to.be.within(
        30 * 60_000 - 2000,
        30 * 60_000 + 2000,
      );
      expect(await history(p.id)).to.deep.equal(['∅→pending (created)']);
      // no job until the client pays
      expect(await c.env.services.db('outbox').whereRaw('payload::text like ?', [`%${p.id}%`])).to.have.length(0);
    });

    const refused: [string, Record<string, unknown>, string][] = [
      ['an operator', { operator: 'vodacom' }, 'operator'],
      ['a phone', { phone: '243990000001' }, 'phone'],
      ['no customer_email', { customer_email: undefined }, 'customer_email'],
      ['no customer_name', { customer_name: undefined }, 'customer_name'],
      ['no return_url', { return_url: undefined }, 'return_url'],
      ['a javascript: return_url', { return_url: 'javascript:alert(1)' }, 'return_url'],
      ['a relative return_url', { return_url: '/return' }, 'return_url'],
      ['a protocol-relative return_url', { return_url: '//shop.example/return' }, 'return_url'],
      ['an ftp return_url', { return_url: 'ftp://shop.example/return' }, 'return_url'],
    ];
    for (const [what, over, param] of refused) {
      it(`refuses a card payment with ${what}: 400 validation-failed on ${param}, nothing created`, async () => {
        const reference = `bad-${randomUUID()}`;
        const res = await shop.client.post('/v1/payments', cardPaymentBody({ ...over, reference }));
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
        expect(await c.env.services.db('payments').where({ reference })).to.have.length(0);
      });
    }

    it('live keys with no card connector routed: an http return_url is 400 (https only), an https one 422 method-unavailable, nothing written; cards closed in /v1/availability', async () => {
      const live = await c.env.merchant({ scope: 'payments', environment: 'live' });
      const res = await live.client.post('/v1/payments', cardPaymentBody({ return_url: 'http://shop.example/return' }));
      expect(res.status).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param: 'return_url' });
      const reference = `live-card-${randomUUID()}`;
      // the sandbox never serves live keys: without LIVE_CARD there is no card route in live
      const refused = await live.client.post('/v1/payments', cardPaymentBody({ reference }));
      expect(refused.status, JSON.stringify(refused.body)).to.equal(422);
      expect(refused.body.error).to.include({ code: 'method-unavailable', param: 'method' });
      expect(await c.env.services.db('payments').where({ reference })).to.have.length(0);
      expect(await c.env.services.db('payments').where({ environment: 'live', method: 'card' })).to.have.length(0);
      const reader = await c.env.merchant({ scope: 'read', environment: 'live' });
      const liveAvailability = await reader.client.get('/v1/availability');
      expect(liveAvailability.status).to.equal(200);
      expect(liveAvailability.body.card).to.deep.equal({ collection: 'closed' });
      // test keys always reach the card sandbox
      const testAvailability = await shop.client.get('/v1/availability');
      expect(testAvailability.body.card).to.deep.equal({ collection: 'operational' });
    });
  });

  describe('the checkout page', () => {
    it('is server-rendered HTML with the merchant, amount, description and reference, in French by default', async () => {
      const p = await createCardPayment(shop.client, { description: 'Café <moulu> & sucre' });
      const res = await page(`/checkout/${p.id}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      expect(res.text).to.include('<html lang="fr">');
      expect(res.text).to.include('Kin Café &amp; Co');
      expect(res.text).to.include('25.00 USD');
      expect(res.text).to.include('Café &lt;moulu&gt; &amp; sucre');
      expect(res.text).to.include(p.reference);
      expect(res.text).to.include('Payer 25.00 USD');
      // the card fields come from the vault's origin; the only script is the service's own file
      expect(res.text).to.include(`src="${c.vaultUrl}/fields?payment=${p.id}&amp;lang=fr"`);
      expect(res.text.match(/<script[^>]*>/g)).to.deep.equal(['<script src="/checkout/assets/checkout.js">']);
      expect(res.text).not.to.match(/<script>|\son[a-z]+=|style="/);
    });

    it('speaks English from Accept-Language, and ?lang overrides it', async () => {
      const p = await createCardPayment(shop.client);
      const en = await page(`/checkout/${p.id}`, { 'Accept-Language': 'en-GB,en;q=0.9,fr;q=0.5' });
      expect(en.text).to.include('<html lang="en">').and.include('Pay 25.00 USD');
      const fr = await page(`/checkout/${p.id}?lang=fr`, { 'Accept-Language': 'en' });
      expect(fr.text).to.include('<html lang="fr">').and.include('Payer 25.00 USD');
      const preferFr = await page(`/checkout/${p.id}`, { 'Accept-Language': 'en;q=0.4, fr-CD;q=0.8' });
      expect(preferFr.text).to.include('<html lang="fr">');
    });

    it('carries the headers of docs/decisions.md#cards-hosted-checkout: CSP (own scripts, frames from the vault and acquirer only), DENY, no-store, no cookie', async () => {
      const p = await createCardPayment(shop.client);
      const res = await page(`/checkout/${p.id}`);
      const csp = res.headers.get('content-security-policy')!;
      const directives = Object.fromEntries(
        csp
          .split(';')
          .map((d) => d.trim().split(/\s+/))
          .map(([k, ...v]) => [k, v]),
      );
      expect(directives['script-src']).to.deep.equal(["'self'"]);
      expect(directives['default-src']).to.deep.equal(["'none'"]);
      // 'self' only for /checkout/{id}/3ds-return, which the issuer's challenge frame lands on
      expect(directives['frame-src']).to.deep.equal(["'self'", c.vaultUrl, c.providerUrl]);
      expect(directives['frame-ancestors']).to.deep.equal(["'none'"]);
      expect(res.headers.get('x-frame-options')).to.equal('DENY');
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.headers.get('set-cookie')).to.equal(null);
      expect(res.headers.get('strict-transport-security')).to.equal('max-age=63072000; includeSubDomains; preload');
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
      expect(res.headers.get('permissions-policy')).to.equal('geolocation=(), microphone=(), camera=()');
      expect(res.headers.get('server')).to.equal('Service');
      const script = await page('/checkout/assets/checkout.js');
      expect(script.status).to.equal(200);
      expect(script.headers.get('content-type')).to.match(/^text\/javascript/);
    });

    it('unknown or malformed ids on every /checkout path: the 404 page (or 404 JSON for the API paths), never a 500', async () => {
      const mobile = await shop.client.post('/v1/payments', {
        amount: 100,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `mm-${randomUUID()}`,
      });
      for (const id of [
        `pay_${randomUUID()}`,
        'nope',
        'pay_',
        `PAY_${randomUUID()}`,
        '%00',
        'pay_%F0%9F%92%A5',
        mobile.body.id,
        `re_${randomUUID()}`,
      ]) {
        for (const path of [`/checkout/${id}`, `/checkout/${id}/3ds-return`]) {
          const res = await page(path);
          expect(res.status, path).to.equal(404);
          expect(res.headers.get('content-type'), path).to.match(/^text\/html/);
          expect(res.text, path).to.include('Paiement introuvable');
        }
        const status = await page(`/checkout/${id}/status`);
        expect(status.status, `${id} status`).to.equal(404);
        const res = await pay(base(), id, { token: 'tok_aaaaaaaaaaaaaaaa' }, newIp());
        expect(res.status, `${id} pay`).to.equal(404);
      }
      for (const path of [
        '/checkout',
        '/checkout/',
        '/checkout/a/b/c',
        '/checkout/assets/nope.js',
        `/checkout/pay_${randomUUID()}/other`,
      ]) {
        const res = await page(path);
        expect(res.status, path).to.equal(404);
        expect(res.text, path).to.include('Paiement introuvable');
      }
    });
  });

  describe('outcomes through the kernel', () => {
    it('4242: approved, the callback makes it succeeded: card on the object, ledger credit, payment.succeeded with the customer', async () => {
      const p = await paid('4242424242424242');
      const row = await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
      expect(row.card).to.deep.equal({ brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2034 });
      expect(row.checkout_token).to.equal(null);
      const view = (await shop.client.get(`/v1/payments/${p.id}`)).body;
      expect(view).to.include({ status: 'succeeded', provider: 'card-sandbox', failure_code: null, amount_net: 2_427 });
      expect(view.provider_ref).to.match(/^SBX-CARD-/);
      expect(view.card).to.deep.equal({ brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2034 });
      expect(await history(p.id)).to.deep.equal(['∅→pending (created)', 'pending→succeeded (provider-callback)']);
      const evs = await events(p.id);
      expect(evs.map((e) => e.type)).to.deep.equal(['payment.succeeded']);
      expect(evs[0].body.data.object.customer).to.deep.equal({
        msisdn: null,
        operator: null,
        email: 'client@shop.example',
        name: 'Amani Client',
      });
      expect(evs[0].body.data.object.card).to.deep.equal({
        brand: 'visa',
        last4: '4242',
        exp_month: 12,
        exp_year: 2034,
      });
      expect(await credits(p.id)).to.have.length(1);
      // the callback came from the acquirer, kind card_payment
      const cb = await eventually(
        async () =>
          (await c.env.services.db('provider_callbacks').where({ object_id: p.id }).first())?.processed_at &&
          c.env.services.db('provider_callbacks').where({ object_id: p.id }).first(),
      );
      expect(cb).to.include({
        provider: 'card-sandbox',
        object_kind: 'card_payment',
        reported_status: 'succeeded',
        outcome: 'applied',
      });
      // the page now shows the outcome and the way back; a second pay is 409
      const shown = await page(`/checkout/${p.id}`);
      expect(shown.text)
        .to.include('Paiement réussi')
        .and.include(`https://shop.example/return?cart=42&amp;payment_id=${p.id}&amp;status=succeeded`);
      const again = await pay(base(), p.id, { token: (await tokenFor(c.vaultUrl, p.id)).token }, newIp());
      expect(again.status).to.equal(409);
      expect(again.body.error.code).to.equal('payment-not-pending');
      const status = await (await fetch(`${base()}/checkout/${p.id}/status`)).json();
      expect(status).to.include({
        status: 'succeeded',
        return_url: `https://shop.example/return?cart=42&payment_id=${p.id}&status=succeeded`,
      });
    });

    it('4000000000000002: declined at once: failed card-declined, payment.failed, no credit', async () => {
      const p = await paid('4000000000000002');
      const row = await waitForRow(c.env, p.id, (r) => r.status === 'failed');
      expect(row).to.include({ failure_code: 'card-declined' });
      expect(row.card).to.deep.include({ last4: '0002' });
      expect(await history(p.id)).to.deep.equal(['∅→pending (created)', 'pending→failed (card-declined)']);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.failed']);
      expect(await credits(p.id)).to.have.length(0);
      const shown = await page(`/checkout/${p.id}?lang=en`);
      expect(shown.text).to.include('Payment declined').and.include('Your card was declined');
    });

    async function challenged() {
      const p = await paid('4000000000003220');
      const row = await waitForRow(c.env, p.id, (r) => r.status === 'processing');
      expect(row.challenge_url).to.match(new RegExp(`^${c.providerUrl}/acs/SBX-CARD-`));
      expect(await history(p.id)).to.deep.equal(['∅→pending (created)', 'pending→processing (3ds-required)']);
      // the 3-D Secure window
      expect(row.window_ends_at.getTime() - c.env.clock.now()).to.be.within(0, THREE_DS_WINDOW_MS);
      const shown = await page(`/checkout/${p.id}`);
      expect(shown.text).to.include(`id="challenge-frame" src="${row.challenge_url}"`);
      return { p, row };
    }

    async function answerChallenge(challengeUrl: string, action: 'complete' | 'fail') {
      const issuer = await fetch(challengeUrl);
      const text = await issuer.text();
      expect(text)
        .to.include('TEST PAGE')
        .and.include('25.00 USD')
        .and.include('Complete authentication')
        .and.include('Fail authentication');
      expect(issuer.headers.get('content-security-policy')).to.include(`frame-ancestors ${base()}`);
      const res = await fetch(`${challengeUrl}/${action}`, { method: 'POST', redirect: 'manual' });
      expect(res.status).to.equal(303);
      return res.headers.get('location')!;
    }

    it('4000000000003220 completed: processing during 3-D Secure, then succeeded by the callback; 3ds-return framing headers', async () => {
      const { p, row } = await challenged();
      const back = await answerChallenge(row.challenge_url, 'complete');
      expect(back).to.equal(`${base()}/checkout/${p.id}/3ds-return`);
      const ret = await page(`/checkout/${p.id}/3ds-return`);
      expect(ret.status).to.equal(200);
      expect(ret.headers.get('x-frame-options')).to.equal('SAMEORIGIN');
      expect(ret.headers.get('content-security-policy')).to.equal("frame-ancestors 'self'");
      expect(ret.headers.get('cache-control')).to.equal('no-store');
      await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
      // the acquirer's callback, or asking the acquirer (which the 3ds-return brought forward), whichever came first
      const steps = await history(p.id);
      expect(steps.slice(0, 2)).to.deep.equal(['∅→pending (created)', 'pending→processing (3ds-required)']);
      expect(steps.slice(2)).to.have.length(1);
      expect(steps[2]).to.be.oneOf([
        'processing→succeeded (provider-callback)',
        'processing→succeeded (provider-asked)',
      ]);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.succeeded']);
      expect(await credits(p.id)).to.have.length(1);
    });

    it('4000000000003220 failed: failed authentication-failed, payment.failed, no credit', async () => {
      const { p, row } = await challenged();
      await answerChallenge(row.challenge_url, 'fail');
      const failed = await waitForRow(c.env, p.id, (r) => r.status === 'failed');
      expect(failed.failure_code).to.equal('authentication-failed');
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.failed']);
      expect(await credits(p.id)).to.have.length(0);
      const shown = await page(`/checkout/${p.id}`);
      expect(shown.text).to.include('Paiement refusé').and.include('authentification 3-D Secure a échoué');
    });

    it('a challenge left unanswered past the 3-D Secure window: the acquirer reports it expired, the sweep cancels it (payment.cancelled)', async () => {
      const { p } = await challenged();
      // the clock of the acquirer and the sweep past the challenge's window
      c.env.clock.advance(THREE_DS_WINDOW_MS + 1);
      const row = await waitForRow(c.env, p.id, (r) => r.status === 'cancelled');
      expect(row.failure_code).to.equal(null);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.cancelled']);
      expect((await history(p.id)).at(-1)).to.equal('processing→cancelled (provider-window-expired)');
      expect((await page(`/checkout/${p.id}`)).text).to.include('Paiement expiré');
    });

    it('a pending card payment not paid within 30 minutes is cancelled by the sweep (payment.cancelled); its page says so; pay is 409', async () => {
      const p = await createCardPayment(shop.client);
      const clock = new ManualClock(Date.now() + 31 * 60_000);
      const ctx: ServiceContext = createContext({ role: 'worker', name: 'cards-test', config: c.env.config, clock });
      try {
        // sweep until it is decided: the card-charge pool sweeps too (a row it holds is skipped), and an ask the
        // acquirer did not answer in time (a loaded machine) is asked again once its backoff is over
        await eventually(
          async () => {
            clock.advance(MAX_ASK_INTERVAL_MS + 1);
            await sweepOpen(ctx, cardPaymentKind);
            return (await paymentRow(c.env, p.id)).status === 'cancelled';
          },
          10_000,
          100,
        );
      } finally {
        await ctx.close();
      }
      const row = await paymentRow(c.env, p.id);
      expect(row.status).to.equal('cancelled');
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.cancelled']);
      const shown = await page(`/checkout/${p.id}?lang=en`);
      expect(shown.text).to.include('Payment expired').and.include(`status=cancelled`);
      const res = await pay(base(), p.id, { token: (await tokenFor(c.vaultUrl, p.id)).token }, newIp());
      expect(res.status).to.equal(409);
      expect(res.body.error.code).to.equal('payment-not-pending');
    });

    it('a card payment cannot be refunded through the API: 422 card-refund-not-supported', async () => {
      const p = await paid('4242424242424242');
      await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
      const res = await shop.client.post(`/v1/payments/${p.id}/refund`, {});
      expect(res.status).to.equal(422);
      expect(res.body.error.code).to.equal('card-refund-not-supported');
    });
  });

  describe('bad input', () => {
    async function refusedToken(p: any, token: string, code: string) {
      const before = await paymentRow(c.env, p.id);
      const res = await pay(base(), p.id, { token }, newIp());
      expect(res.status).to.equal(202);
      const after = await waitForRow(c.env, p.id, (r) => r.checkout_token === null && r.checkout_error !== null);
      expect(after).to.include({
        status: 'pending',
        checkout_error: code,
        version: before.version,
        provider_ref: null,
        card: null,
        sent_at: null,
      });
      expect(await history(p.id)).to.deep.equal(['∅→pending (created)']);
      const status = await (await fetch(`${base()}/checkout/${p.id}/status`)).json();
      expect(status).to.include({ status: 'pending', charging: false, checkout_error: code });
      return after;
    }

    it('a forged token: the payment is unchanged, the page says so, and a real card still pays', async () => {
      const p = await createCardPayment(shop.client);
      await refusedToken(p, 'tok_forgedforgedforged', 'token-invalid');
      expect((await page(`/checkout/${p.id}?lang=en`)).text).to.include('Your card details could not be used');
      const { token } = await tokenFor(c.vaultUrl, p.id);
      expect((await pay(base(), p.id, { token }, newIp())).status).to.equal(202);
      await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
    });

    it('a token issued for another payment (foreign) and a token already used: refused, the payment unchanged', async () => {
      const p = await createCardPayment(shop.client);
      const other = await createCardPayment(shop.client);
      await refusedToken(p, (await tokenFor(c.vaultUrl, other.id)).token, 'token-foreign');
      const { token } = await tokenFor(c.vaultUrl, p.id);
      // someone used it already (the acquirer redeemed it)
      const redeemed = await fetch(`${c.vaultUrl}/v1/tokens/${token}/redeem`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${VAULT_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ payment: p.id }),
      });
      expect(redeemed.status).to.equal(200);
      await refusedToken(p, token, 'token-used');
      expect((await page(`/checkout/${p.id}`)).text).to.include('déjà servi');
    });

    it('an expired token: refused, the payment unchanged', async () => {
      const p = await createCardPayment(shop.client);
      const { token } = await tokenFor(c.vaultUrl, p.id);
      c.env.clock.advance(TOKEN_TTL_MS + 1); // the vault's clock: past the token's life
      await refusedToken(p, token, 'token-expired');
    });

    it('pay on a cancelled, failed or succeeded payment: 409, nothing changes', async () => {
      const failed = await paid('4000000000000002');
      await waitForRow(c.env, failed.id, (r) => r.status === 'failed');
      const before = await paymentRow(c.env, failed.id);
      const res = await pay(base(), failed.id, { token: (await tokenFor(c.vaultUrl, failed.id)).token }, newIp());
      expect(res.status).to.equal(409);
      expect(res.body.error).to.include({ code: 'payment-not-pending' });
      expect(await paymentRow(c.env, failed.id)).to.deep.equal(before);
    });

    it('a second pay while the first token is being charged: 409 payment-in-progress', async () => {
      const p = await createCardPayment(shop.client);
      const ip = newIp();
      // two tokens posted back to back: the first holds the payment until its charge is answered
      const [a, b] = await Promise.all([
        pay(base(), p.id, { token: (await tokenFor(c.vaultUrl, p.id)).token }, ip),
        pay(base(), p.id, { token: (await tokenFor(c.vaultUrl, p.id)).token }, ip),
      ]);
      expect([a.status, b.status].sort()).to.deep.equal([202, 409]);
      expect((a.status === 409 ? a : b).body.error.code).to.equal('payment-in-progress');
      await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
    });

    it('malformed pay requests: 400 on the token, 415 without JSON, 403 from another origin; nothing changes', async () => {
      const p = await createCardPayment(shop.client);
      const ip = newIp();
      for (const body of [
        {},
        { token: 42 },
        { token: '4242424242424242' },
        { token: 'tok_' },
        { token: 'tok_a b c d e f g h' },
      ]) {
        const res = await pay(base(), p.id, body, ip);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param: 'token' });
      }
      const extra = await pay(base(), p.id, { token: 'tok_aaaaaaaaaaaa', number: '4242424242424242' }, ip);
      expect(extra.body.error).to.include({ code: 'validation-failed', param: 'number' });
      expect((await pay(base(), p.id, '{"token":', ip)).body.error.code).to.equal('invalid-json');
      const form = await fetch(`${base()}/checkout/${p.id}/pay`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...newIp() },
        body: 'token=tok_aaaaaaaaaaaa',
      });
      expect(form.status).to.equal(415);
      const foreign = await pay(
        base(),
        p.id,
        { token: 'tok_aaaaaaaaaaaa' },
        { ...newIp(), Origin: 'https://evil.example' },
      );
      expect(foreign.status).to.equal(403);
      const row = await paymentRow(c.env, p.id);
      expect(row).to.include({ status: 'pending', checkout_token: null, version: 1 });
    });

    it('POST /pay is limited to 10 a minute per client IP (429 with Retry-After); another IP is not slowed', async () => {
      const p = await createCardPayment(shop.client);
      const ip = newIp();
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await pay(base(), p.id, { token: 42 }, ip)).status);
      expect(statuses.slice(0, 10)).to.deep.equal(Array(10).fill(400));
      const last = await pay(base(), p.id, { token: 42 }, ip);
      expect(last.status).to.equal(429);
      expect(last.body.error.code).to.equal('rate-limit-exceeded');
      expect(Number(last.headers.get('retry-after'))).to.be.within(1, 60);
      expect((await pay(base(), p.id, { token: 42 }, newIp())).status).to.equal(400);
    });

    it('a 3ds-return for a payment that had no challenge: 409 page, nothing changes', async () => {
      const p = await createCardPayment(shop.client);
      const res = await page(`/checkout/${p.id}/3ds-return`);
      expect(res.status).to.equal(409);
      expect(res.headers.get('x-frame-options')).to.equal('SAMEORIGIN');
      expect(res.text).to.include('Aucune authentification en cours');
      expect(await paymentRow(c.env, p.id)).to.include({ status: 'pending', version: 1 });
    });

    it('forged acquirer callbacks are refused like mobile-money ones (401, nothing stored)', async () => {
      const p = await createCardPayment(shop.client);
      const raw = JSON.stringify({
        event_id: `x_${randomUUID()}`,
        kind: 'card_payment',
        external_id: p.id,
        provider_ref: 'X',
        status: 'succeeded',
        failure_code: null,
        failure_message: null,
        occurred_at: Math.floor(Date.now() / 1000),
      });
      const now = Math.floor(Date.now() / 1000);
      for (const signature of [
        signCallback('not-the-secret', raw, now),
        signCallback(SANDBOX_SECRET, raw, now),
        signCallback(CARD_SECRET, raw, now - 3600),
        '',
      ]) {
        const res = await fetch(`${base()}/callbacks/card-sandbox`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...(signature ? { 'X-Provider-Signature': signature } : {}) },
          body: raw,
        });
        expect(res.status).to.equal(401);
      }
      // the mobile-money sandbox's callback URL cannot decide a card payment either
      const mm = await fetch(`${base()}/callbacks/vodacom-sandbox`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Provider-Signature': signCallback(SANDBOX_SECRET, raw, now) },
        body: raw,
      });
      expect(mm.status).to.equal(200);
      await eventually(
        async () =>
          (
            await c.env.services
              .db('provider_callbacks')
              .where({ object_id: p.id, provider: 'vodacom-sandbox' })
              .first()
          )?.outcome,
      );
      expect((await c.env.services.db('provider_callbacks').where({ object_id: p.id }).first()).outcome).to.equal(
        'provider-mismatch',
      );
      expect(await c.env.services.db('provider_callbacks').where({ object_id: p.id })).to.have.length(1);
      expect(await paymentRow(c.env, p.id)).to.include({ status: 'pending', version: 1 });
    });
  });

  describe('a provider that contradicts what we did (docs/decisions.md#late-success)', () => {
    it('a correctly signed success for a card payment never charged: recorded, listed in /admin/attention, not applied, no credit', async () => {
      const p = await createCardPayment(shop.client);
      const now = Math.floor(Date.now() / 1000);
      const raw = JSON.stringify({
        event_id: `x_${randomUUID()}`,
        kind: 'card_payment',
        external_id: p.id,
        provider_ref: 'CH-NEVER',
        status: 'succeeded',
        failure_code: null,
        failure_message: null,
        occurred_at: now,
      });
      const res = await fetch(`${base()}/callbacks/card-sandbox`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Provider-Signature': signCallback(CARD_SECRET, raw, now) },
        body: raw,
      });
      expect(res.status).to.equal(200);
      const cb = await eventually(async () => {
        const row = await c.env.services.db('provider_callbacks').where({ object_id: p.id }).first();
        return row?.processed_at ? row : undefined;
      });
      expect(cb.outcome).to.equal('never-sent');
      expect(await paymentRow(c.env, p.id)).to.include({ status: 'pending', version: 1 });
      expect(await credits(p.id)).to.have.length(0);
      expect(await events(p.id)).to.have.length(0);
      const attention = await c.env.admin('GET', '/admin/attention');
      expect(attention.body.data.find((i: any) => i.id === p.id)).to.include({
        reason: 'never-sent',
        object: 'card_payment',
        status: 'pending',
      });
      // the client can still pay it, and then the acquirer's word counts
      const { token } = await tokenFor(c.vaultUrl, p.id, '4242424242424242');
      expect((await pay(base(), p.id, { token }, newIp())).status).to.equal(202);
      await waitForRow(c.env, p.id, (r) => r.status === 'succeeded');
      expect(await credits(p.id)).to.have.length(1);
    });
  });

  // a suite of its own, so that it runs after every flow above (mocha runs a suite's own tests before its nested suites)
  describe('after every flow', () => {
    it('no card number anywhere in the service: rows, jobs, callbacks, events, or any process log', async () => {
      expect(
        await c.env.services.db('payments').where({ method: 'card' }).whereNotNull('card'),
      ).to.have.length.greaterThan(5);
      const numbers = ['4242424242424242', '4000000000003220', '4000000000000002'];
      const dump = JSON.stringify(
        await Promise.all(
          ['payments', 'outbox', 'provider_callbacks', 'events', 'payment_status_changes'].map((t) =>
            c.env.services.db(t).select(),
          ),
        ),
      );
      for (const n of numbers) expect(dump).not.to.include(n);
      // the vault's own log too: numbers never, tokens by their first characters only
      const logs = c.processes
        .flatMap((p) => p.lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))))
        .join('\n');
      for (const n of numbers) expect(logs).not.to.include(n);
      expect(logs).not.to.match(/tok_[A-Za-z0-9_-]{10,}/);
    });
  });

  describe('retention (docs/retention.md#purged)', () => {
    it('the checkout attempts (IP, user agent, challenge) of final payments go after 90 days; an open payment keeps its own', async () => {
      const DAY = 24 * 3600 * 1000;
      const attemptOf = (id: string) => c.env.services.db('card_attempts').where({ payment_id: id }).first();
      const done = await paid('4242424242424242');
      await waitForRow(c.env, done.id, (r) => r.status === 'succeeded');
      // a refused token leaves the payment open (pending), with its attempt recorded
      const open = await createCardPayment(shop.client);
      expect((await pay(base(), open.id, { token: 'tok_forgedforgedforged' }, newIp())).status).to.equal(202);
      await waitForRow(c.env, open.id, (r) => r.checkout_error === 'token-invalid');
      expect(await attemptOf(done.id)).to.include({ attempt: 1 });
      expect(await attemptOf(open.id)).to.include({ attempt: 1 });
      const now = c.env.clock.now();
      // younger than 90 days: kept
      expect(await purgeCardAttempts(c.env.services.db, { now: now + 89 * DAY })).to.equal(0);
      // past 90 days: the final payment's attempt goes, the open one's stays whatever its age (its ask names it)
      expect(await purgeCardAttempts(c.env.services.db, { now: now + 91 * DAY })).to.be.greaterThan(0);
      expect(await attemptOf(done.id)).to.equal(undefined);
      expect(await attemptOf(open.id)).to.include({ attempt: 1, payment_id: open.id });
      // the payment itself is a transaction: kept, its card with it
      expect((await paymentRow(c.env, done.id)).card).to.include({ last4: '4242' });

      // and the card-charge pool purges on its own once the service clock is 90 days on
      const later = await paid('4242424242424242');
      await waitForRow(c.env, later.id, (r) => r.status === 'succeeded');
      expect(await attemptOf(later.id)).to.include({ attempt: 1 });
      c.env.clock.advance(91 * DAY);
      await eventually(async () => (await attemptOf(later.id)) === undefined, 15_000);
      expect((await paymentRow(c.env, later.id)).status).to.equal('succeeded');
    });
  });
});
