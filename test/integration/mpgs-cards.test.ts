import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  startMpgsSimulator,
  type MpgsSimulator,
  type MpgsSimulatorOptions,
} from '../../scripts/simulators/mpgs/server';
import { cardPaymentBody, pay, paymentRow, waitForRow } from '../helpers/cards';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';

/**
 * Live card payments through the Mastercard Gateway connector (shared/providers/mpgs), end to end
 * over HTTP against its simulator (scripts/simulators/mpgs): the checkout routes open a gateway
 * session, the card is put in it as the hosted fields would (no browser here: test/e2e drives the
 * real page), the page's POST /checkout/{id}/pay posts the session id, and the card-charge worker
 * authenticates (EMV 3-D Secure) and pays; notifications arrive at POST /callbacks/mpgs.
 */
describe('live card payments through the Mastercard Gateway (simulator)', function () {
  this.timeout(120_000);
  const SECRET = 'mpgs-notification-secret-0123456789';
  const simOpts: MpgsSimulatorOptions = {
    merchantId: 'TESTKINCAFE01',
    apiPassword: 'sim-api-password',
    notificationSecret: SECRET,
    notificationRetryMs: 100,
    slowMs: 1_000,
  };
  let sim: MpgsSimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const processes: RunningProcess[] = [];
  const BROWSER = {
    acceptHeaders: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    colorDepth: 24,
    javaEnabled: false,
    language: 'fr-CD',
    screenHeight: 900,
    screenWidth: 1440,
    timeZone: -60,
  };
  let ip = 1;
  const newIp = () => ({ 'X-Forwarded-For': `198.51.100.${ip++}` });

  before(async () => {
    sim = await startMpgsSimulator(simOpts);
    env = await startTestEnv({
      LIVE_CARD: 'mpgs',
      MPGS_GATEWAY_URL: sim.url,
      MPGS_MERCHANT_ID: simOpts.merchantId,
      MPGS_API_PASSWORD: simOpts.apiPassword,
      MPGS_NOTIFICATION_SECRET: SECRET,
      MPGS_TIMEOUT_MS: '5000',
      // the profile's own maximum, below the service's
      MPGS_MAX_USD: '500000',
      TRUSTED_PROXIES: '1',
      ASK_INTERVAL_MS: '200',
    });
    // Merchant Administration's notification URL: the service's
    simOpts.notificationUrl = `${env.baseUrl}/callbacks/mpgs`;
    processes.push(
      ...(await Promise.all([
        env.spawn('workers/card-charge/index.ts'),
        env.spawn('workers/callback-reconciler/index.ts'),
      ])),
    );
    shop = await env.merchant({
      environment: 'live',
      scope: 'full',
      merchant: { fees: { USD: { percent_bps: 0, fixed: 0 } } },
    });
  });
  after(async () => {
    await env?.close();
    await sim?.close();
  });

  const create = async (over: Record<string, unknown> = {}) => {
    const res = await shop.client.post('/v1/payments', cardPaymentBody({ reference: `mpgs-${randomUUID()}`, ...over }));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ provider: 'mpgs', environment: 'live', status: 'pending' });
    return res.body as { id: string; amount: number };
  };

  /** The checkout page of a payment still to be paid: its gateway session and its CSP. */
  const checkoutPage = async (id: string) => {
    const res = await fetch(`${env.baseUrl}/checkout/${id}`);
    const text = await res.text();
    expect(res.status).to.equal(200);
    const session = /data-session="([^"]+)"/.exec(text)?.[1];
    expect(session, 'the page names its gateway session').to.match(/^SESSION/);
    return { text, csp: res.headers.get('content-security-policy') ?? '', session: session! };
  };

  /** What the checkout does with a card: the hosted fields store it in the session, the page posts the session id. */
  const payWith = async (id: string, number: string, expiry: string) => {
    const { session } = await checkoutPage(id);
    const [expiryMonth, expiryYear] = expiry.split('/');
    sim.putCard(session, { number, expiryMonth, expiryYear, securityCode: '100' });
    const res = await pay(env.baseUrl, id, { session, browser: BROWSER }, newIp());
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    return session;
  };
  const final = (id: string) => waitForRow(env, id, (r) => !['pending', 'processing'].includes(r.status), 30_000);
  const txns = (id: string) => sim.transactions().filter((t) => t.orderId === id);
  const payments = (id: string) => txns(id).filter((t) => t.type === 'PAYMENT');

  it('opens a gateway session for the page: session.js and frames from the gateway origin only, no card field of its own', async () => {
    const p = await create();
    const { text, csp } = await checkoutPage(p.id);
    expect(text).to.include(`<script src="${sim.url}/form/version/100/merchant/${simOpts.merchantId}/session.js">`);
    expect(csp).to.include(`script-src 'self' ${sim.url}`);
    expect(csp).to.include(`frame-src 'self' ${sim.url}`);
    // its inputs are placeholders the gateway's script replaces: empty, read-only, never named for a form post
    expect(text).to.match(/<input id="card-number" readonly/);
    expect(text).not.to.match(/name="(number|cardNumber|securityCode)"/);
    // the session carries the order's amount and currency (UPDATE_SESSION), and no card yet
    expect(txns(p.id)).to.deep.equal([]);
  });

  it('frictionless: authenticates, pays once, and the payment succeeds from the PAY answer', async () => {
    const p = await create();
    await payWith(p.id, '2223000000000007', '01/39');
    const row = await final(p.id);
    expect(row).to.include({ status: 'succeeded', provider_ref: p.id, failure_code: null });
    expect(txns(p.id).map((t) => t.id)).to.deep.equal(['auth-1', 'pay-1']);
    expect(payments(p.id)).to.have.length(1);
    expect(payments(p.id)[0]).to.include({ amount: '25.00', currency: 'USD', requests: 1 });
    const got = await shop.client.get(`/v1/payments/${p.id}`);
    expect(got.body).to.include({ status: 'succeeded' });
    // the card as the PAY answer's sourceOfFunds names it: brand, last 4 digits and expiry, never more of its number
    const card = { brand: 'mastercard', last4: '0007', exp_month: 1, exp_year: 2039 };
    expect(got.body.card).to.deep.equal(card);
    expect(row.card).to.deep.equal(card);
    expect(JSON.stringify(row)).not.to.contain('222300');
  });

  it('challenge approved: the challenge HTML is served on our origin, the return re-reads the gateway, then PAY', async () => {
    const p = await create();
    await payWith(p.id, '5123450000000008', '01/39');
    const row = await waitForRow(env, p.id, (r) => r.status === 'processing');
    expect(row.challenge_url).to.equal(`${env.baseUrl}/checkout/${p.id}/3ds-challenge`);
    const card = { brand: 'mastercard', last4: '0008', exp_month: 1, exp_year: 2039 };
    expect(row.card, 'named by the authentication answer').to.deep.equal(card);
    const page = await fetch(row.challenge_url);
    const html = await page.text();
    expect(page.status).to.equal(200);
    expect(html).to.include('challengeFrame').and.include(`${sim.url}/acs/challenge`);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).to.match(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).to.include(`form-action ${sim.url}`).and.include("frame-ancestors 'self'");
    expect(payments(p.id)).to.deep.equal([]);
    sim.completeChallenge(p.id, 'auth-1', true);
    // the gateway's form post back; what it says is never read
    const back = await fetch(`${env.baseUrl}/checkout/${p.id}/3ds-return`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ 'order.id': p.id, 'transaction.id': 'auth-1', result: 'FAILURE' }).toString(),
    });
    expect(back.status).to.equal(200);
    const done = await final(p.id);
    expect(done.status).to.equal('succeeded');
    expect(done.card).to.deep.equal(card);
    expect(payments(p.id)).to.have.length(1);
    expect(payments(p.id)[0]).to.include({ id: 'pay-1', result: 'SUCCESS' });
  });

  it('challenge approved but the browser never returns: asked from a minute on and paid well before the 3-D Secure window ends', async () => {
    const p = await create();
    await payWith(p.id, '5123450000000008', '01/39');
    const started = await waitForRow(env, p.id, (r) => r.status === 'processing');
    const windowEnds = started.window_ends_at.getTime();
    // the first minute: nobody asks the gateway yet
    env.clock.advance(61_000);
    // asked, the challenge still unfinished: pending at the gateway, and never cancelled before its window ends
    const asked = await waitForRow(env, p.id, (r) => r.asks >= 1);
    expect(asked.status).to.equal('processing');
    expect(payments(p.id)).to.deep.equal([]);
    sim.completeChallenge(p.id, 'auth-1', true);
    // no 3ds-return: the sweep's next asks (doubling waits) find the authentication and PAY
    env.clock.advance(30_000);
    const done = await final(p.id);
    expect(done.status).to.equal('succeeded');
    expect(env.clock.now()).to.be.below(windowEnds);
    expect(payments(p.id)).to.have.length(1);
    expect(payments(p.id)[0]).to.include({ id: 'pay-1', result: 'SUCCESS' });
  });

  it('challenge failed: authentication-failed, no PAY sent, whatever the browser posts back', async () => {
    const p = await create();
    await payWith(p.id, '5123450000000008', '01/39');
    await waitForRow(env, p.id, (r) => r.status === 'processing');
    sim.completeChallenge(p.id, 'auth-1', false);
    await fetch(`${env.baseUrl}/checkout/${p.id}/3ds-return`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        'order.id': p.id,
        result: 'SUCCESS',
        'response.gatewayRecommendation': 'PROCEED',
      }).toString(),
    });
    const done = await final(p.id);
    expect(done).to.include({ status: 'failed', failure_code: 'authentication-failed' });
    expect(payments(p.id)).to.deep.equal([]);
  });

  for (const [expiry, code] of [
    ['05/39', 'card-declined'],
    ['06/39', 'insufficient-funds'],
    ['04/27', 'expired-card'],
  ] as const) {
    it(`a decline (expiry ${expiry}, 2xx result FAILURE) fails the payment with ${code}`, async () => {
      const p = await create();
      await payWith(p.id, '2223000000000007', expiry);
      const row = await final(p.id);
      expect(row).to.include({ status: 'failed', failure_code: code });
      expect(row.card).to.include({ brand: 'mastercard', last4: '0007' });
      expect(payments(p.id)).to.have.length(1);
      const page = await (await fetch(`${env.baseUrl}/checkout/${p.id}?lang=en`)).text();
      expect(page).to.include('Nothing was charged');
    });
  }

  it('a 5xx after the gateway created the PAY: settled by a retrieve, charged once', async () => {
    const p = await create();
    await payWith(p.id, '2223000000000007', '09/39');
    const row = await final(p.id);
    expect(row.status).to.equal('succeeded');
    expect(payments(p.id)).to.have.length(1);
  });

  it('duplicated notifications change nothing: one success, one ledger credit, one event', async () => {
    sim.setFaults({ notifications: 'duplicate' });
    try {
      const p = await create();
      await payWith(p.id, '2223000000000007', '01/39');
      await final(p.id);
      // the payment is final on PAY's answer; the gateway's second delivery may come after it
      const sent = await eventually(async () => {
        const s = sim.notifications().filter((n) => n.orderId === p.id && n.transactionId === 'pay-1');
        return s.length >= 2 ? s : undefined;
      }, 15_000);
      expect(sent.length).to.be.greaterThanOrEqual(2);
      await eventually(async () => {
        const rows = await env.services.db('provider_callbacks').where({ object_id: p.id });
        return rows.length >= 1 && rows.every((r) => r.processed_at !== null) ? rows : undefined;
      }, 15_000);
      const events = await env.services.db('events').where({ object_id: p.id, type: 'payment.succeeded' });
      expect(events).to.have.length(1);
      const credits = await env.services.db('ledger_transactions').where({ reference_id: p.id });
      expect(credits).to.have.length(1);
    } finally {
      sim.setFaults({ notifications: 'normal' });
    }
  });

  it('missing notifications: the payment still succeeds (the PAY answer, or the sweep’s retrieve)', async () => {
    sim.setFaults({ notifications: 'missing' });
    try {
      const p = await create();
      await payWith(p.id, '2223000000000007', '01/39');
      expect((await final(p.id)).status).to.equal('succeeded');
      expect(sim.notifications().filter((n) => n.orderId === p.id)).to.deep.equal([]);
    } finally {
      sim.setFaults({ notifications: 'normal' });
    }
  });

  const notification = (orderId: string, amount: string, currency = 'USD') => ({
    result: 'SUCCESS',
    response: { gatewayCode: 'APPROVED' },
    order: { id: orderId, amount, currency, status: 'CAPTURED' },
    transaction: { id: 'pay-1', type: 'PAYMENT', amount, currency },
  });

  it('a notification without the secret is 401 and stored nowhere', async () => {
    const p = await create();
    const res = await fetch(`${env.baseUrl}/callbacks/mpgs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Notification-Secret': 'not-the-secret-at-all' },
      body: JSON.stringify(notification(p.id, '25.00')),
    });
    expect(res.status).to.equal(401);
    expect(await env.services.db('provider_callbacks').where({ object_id: p.id })).to.deep.equal([]);
    expect((await paymentRow(env, p.id)).status).to.equal('pending');
  });

  it('a notification naming another amount is recorded, never applied, and listed as amount-mismatch', async () => {
    const p = await create();
    await payWith(p.id, '2223000000000007', '01/39');
    await final(p.id);
    const res = await fetch(`${env.baseUrl}/callbacks/mpgs`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Notification-Secret': SECRET,
        'X-Notification-Id': randomUUID(),
      },
      body: JSON.stringify(notification(p.id, '2500.00')),
    });
    expect(res.status).to.equal(200);
    const cb = await eventually(async () => {
      const rows = await env.services.db('provider_callbacks').where({ object_id: p.id, outcome: 'amount-mismatch' });
      return rows.length ? rows[0] : undefined;
    }, 15_000);
    expect(cb.verified).to.equal(false);
    const attention = await env.admin('GET', '/admin/attention');
    expect(attention.status).to.equal(200);
    expect(attention.body.data.filter((i: any) => i.id === p.id).map((i: any) => i.reason)).to.include(
      'amount-mismatch',
    );
    expect((await paymentRow(env, p.id)).status).to.equal('succeeded');
  });

  it('a field error is the client’s to correct: the session refused, the payment stays payable, a new session pays', async () => {
    const p = await create();
    const { session } = await checkoutPage(p.id);
    // no card stored in the session (what the hosted fields leave when their fields were in error)
    const res = await pay(env.baseUrl, p.id, { session, browser: BROWSER }, newIp());
    expect(res.status).to.equal(202);
    const refused = await waitForRow(env, p.id, (r) => r.checkout_token === null && r.checkout_error !== null);
    expect(refused).to.include({ status: 'pending', checkout_error: 'card' });
    await payWith(p.id, '2223000000000007', '01/39');
    expect((await final(p.id)).status).to.equal('succeeded');
    // the second attempt has ids of its own
    expect(payments(p.id).map((t) => t.id)).to.deep.equal(['pay-2']);
  });

  it('POST /pay takes the session id and the browser only', async () => {
    const p = await create();
    const { session } = await checkoutPage(p.id);
    const extra = await pay(env.baseUrl, p.id, { session, browser: BROWSER, number: '2223000000000007' }, newIp());
    expect(extra.status).to.equal(400);
    expect(extra.body.error).to.include({ code: 'validation-failed', param: 'number' });
    const noBrowser = await pay(env.baseUrl, p.id, { session }, newIp());
    expect(noBrowser.status).to.equal(400);
    expect(noBrowser.body.error).to.include({ param: 'browser' });
    const token = await pay(env.baseUrl, p.id, { session: 'tok_abcdefgh', browser: BROWSER }, newIp());
    expect(token.status).to.equal(400);
    expect(token.body.error).to.include({ param: 'session' });
  });

  it('an amount or currency the gateway profile cannot carry is 422 amount-not-supported at creation', async () => {
    const cdf = await shop.client.post('/v1/payments', cardPaymentBody({ currency: 'CDF', amount: 500_000 }));
    expect(cdf.status).to.equal(422);
    expect(cdf.body.error).to.include({ code: 'amount-not-supported', param: 'currency' });
    const small = await shop.client.post('/v1/payments', cardPaymentBody({ amount: 50 }));
    expect(small.status).to.equal(422);
    expect(small.body.error).to.include({ code: 'amount-not-supported', param: 'amount' });
    const big = await shop.client.post('/v1/payments', cardPaymentBody({ amount: 500_001 }));
    expect(big.status).to.equal(422);
    expect(big.body.error).to.include({ code: 'amount-not-supported', param: 'amount' });
    expect(big.body.error.message).to.include('maximum of 5000');
  });

  it('an outcome the gateway leaves unknown never fails the payment; past its window it is listed for attention', async () => {
    const p = await create();
    await payWith(p.id, '2223000000000007', '05/37');
    const row = await waitForRow(env, p.id, (r) => r.sent_at !== null);
    expect(row.status).to.equal('pending');
    // the checkout window, and an hour past it: still open, asked about, listed
    env.clock.advance(31 * 60_000 + 61 * 60_000);
    const listed = await eventually(async () => {
      const res = await env.admin('GET', '/admin/attention');
      return res.body.data.find((i: any) => i.id === p.id && i.reason === 'open-past-bound');
    }, 15_000);
    expect(listed).to.include({ status: 'pending', provider: 'mpgs' });
    expect((await paymentRow(env, p.id)).status).to.equal('pending');
    expect(payments(p.id)).to.have.length(1);
  });
});
