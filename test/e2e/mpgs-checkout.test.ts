import { expect } from 'chai';
import type { Page, Request } from 'playwright-core';
import { startMpgsSimulator, type MpgsSimulator } from '../../scripts/simulators/mpgs/server';
import { createCardPayment, paymentRow } from '../helpers/cards';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { launchChromium, type Browser } from './browser';

/**
 * The checkout with the Mastercard Gateway's hosted fields in a real browser (Debian's Chromium),
 * live keys routed to `mpgs`, against the gateway simulator on its own origin
 * (scripts/simulators/mpgs): session.js and its iframes, the 3-D Secure challenge in the
 * checkout's frame, the card-charge worker. Every request the browser sends to the service's
 * origin is recorded: none may carry a card number or a security code; no page may throw.
 */
describe('checkout with the Mastercard Gateway in Chromium (e2e)', function () {
  this.timeout(180_000);
  const SECRET = 'mpgs-notification-secret-0123456789';
  const CSC = '7319';
  const CARDS = ['2223000000000007', '5123450000000008', '4111111111111112'];
  let browser: Browser;
  let sim: MpgsSimulator;
  let env: TestEnv;
  let shop: MerchantFixture;
  const toService: { url: string; body: string | null }[] = [];
  const errors: string[] = [];

  before(async () => {
    browser = await launchChromium();
    sim = await startMpgsSimulator({
      merchantId: 'TESTKINSHOP01',
      apiPassword: 'sim-api-password',
      notificationSecret: SECRET,
    });
    env = await startTestEnv({
      LIVE_CARD: 'mpgs',
      MPGS_GATEWAY_URL: sim.url,
      MPGS_MERCHANT_ID: 'TESTKINSHOP01',
      MPGS_API_PASSWORD: 'sim-api-password',
      MPGS_NOTIFICATION_SECRET: SECRET,
      MPGS_TIMEOUT_MS: '5000',
      ASK_INTERVAL_MS: '200',
    });
    await env.spawn('workers/card-charge/index.ts');
    shop = await env.merchant({ environment: 'live', scope: 'full', merchant: { name: 'Kin Shop' } });
  });
  after(async () => {
    await browser?.close();
    await env?.close();
    await sim?.close();
  });

  const service = () => new URL(env.baseUrl).origin;

  async function newPage(): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('request', (r: Request) => {
      if (new URL(r.url()).origin === service()) toService.push({ url: r.url(), body: r.postData() });
    });
    page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
    // a resource that failed is named by the response check below
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
        errors.push(`${page.url()}: console: ${m.text()}`);
    });
    // Chromium asks every origin for its /favicon.ico (none here): anything else that fails is an error
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`${r.status()} ${r.url()}`);
    });
    return page;
  }

  const aPayment = () => createCardPayment(shop.client, { return_url: 'https://shop.example/return' });
  const payments = (id: string) => sim.transactions().filter((t) => t.orderId === id && t.type === 'PAYMENT');

  /** Types into the gateway's iframes (the simulator's origin), as the client does. */
  async function enterCard(page: Page, number: string, expiry = '01/39') {
    const field = (name: string) => page.frameLocator(`iframe[data-mpgs-field="${name}"]`).locator('#f');
    await field('number').fill(number);
    await field('expiryMonth').fill(expiry.slice(0, 2));
    await field('expiryYear').fill(expiry.slice(3));
    await field('securityCode').fill(CSC);
  }

  const payButton = (page: Page) => page.locator('#pay-button');
  const outcome = (page: Page, name: string | RegExp) =>
    page.getByRole('heading', { name }).waitFor({ timeout: 30_000 });

  it('frictionless (French): the gateway’s fields, one PAY, success; a reload after paying changes nothing', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url);
    expect(await page.locator('body').getAttribute('data-state')).to.equal('hosted-session');
    // the card fields are the gateway's iframes, on its origin
    await page.locator('iframe[data-mpgs-field="number"]').waitFor();
    expect(new URL((await page.locator('iframe[data-mpgs-field="number"]').getAttribute('src'))!).origin).to.equal(
      sim.url,
    );
    await enterCard(page, '2223 0000 0000 0007');
    await payButton(page).click();
    await outcome(page, 'Paiement réussi');
    expect((await paymentRow(env, p.id)).status).to.equal('succeeded');
    await page.reload();
    await outcome(page, 'Paiement réussi');
    expect(payments(p.id)).to.have.length(1);
    // the service's page holds no card detail
    expect(await page.content()).not.to.include('2223');
    await page.close();
  });

  it('challenge approved in the checkout’s frame: succeeded, one PAY', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '5123450000000008');
    await payButton(page).click();
    const acs = page.frameLocator('#challenge-frame').frameLocator('#challengeFrame');
    await acs.locator('#approve').click({ timeout: 30_000 });
    await outcome(page, 'Payment succeeded');
    expect(payments(p.id)).to.have.length(1);
    await page.close();
  });

  it('challenge failed: authentication-failed shown, no PAY', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '5123450000000008');
    await payButton(page).click();
    await page
      .frameLocator('#challenge-frame')
      .frameLocator('#challengeFrame')
      .locator('#fail')
      .click({ timeout: 30_000 });
    await outcome(page, 'Payment declined');
    expect(await page.locator('.outcome').innerText()).to.include('3-D Secure authentication failed');
    expect((await paymentRow(env, p.id)).failure_code).to.equal('authentication-failed');
    expect(payments(p.id)).to.deep.equal([]);
    await page.close();
  });

  for (const [expiry, text, code] of [
    ['05/39', 'Your card was declined', 'card-declined'],
    ['06/39', 'Your card has insufficient funds', 'insufficient-funds'],
  ] as const) {
    it(`a decline (${code}) is shown plainly`, async () => {
      const p = await aPayment();
      const page = await newPage();
      await page.goto(`${p.checkout_url}?lang=en`);
      await enterCard(page, '2223000000000007', expiry);
      await payButton(page).click();
      await outcome(page, 'Payment declined');
      expect(await page.locator('.outcome').innerText()).to.include(text);
      expect((await paymentRow(env, p.id)).failure_code).to.equal(code);
      await page.close();
    });
  }

  it('a field error is shown in French and corrected on the same payment', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url);
    await enterCard(page, '4111111111111112');
    await payButton(page).click();
    await page
      .locator('#pay-status', { hasText: 'Le numéro de carte est manquant ou invalide.' })
      .waitFor({ timeout: 20_000 });
    expect(await payButton(page).isEnabled()).to.equal(true);
    await page.frameLocator('iframe[data-mpgs-field="number"]').locator('#f').fill('2223000000000007');
    await payButton(page).click();
    await outcome(page, 'Paiement réussi');
    expect(payments(p.id)).to.have.length(1);
    await page.close();
  });

  it('a double click on pay posts once and charges once', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '2223000000000007');
    const before = toService.filter((r) => r.url.endsWith(`/checkout/${p.id}/pay`)).length;
    await payButton(page).dblclick({ force: true });
    await outcome(page, 'Payment succeeded');
    expect(toService.filter((r) => r.url.endsWith(`/checkout/${p.id}/pay`)).length - before).to.equal(1);
    expect(payments(p.id)).to.have.length(1);
    await page.close();
  });

  it('the back button during the challenge: the challenge is still there, and paying after it charges once', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '5123450000000008');
    await payButton(page).click();
    const acs = page.frameLocator('#challenge-frame').frameLocator('#challengeFrame');
    await acs.locator('#approve').waitFor({ timeout: 30_000 });
    await page.goBack().catch(() => undefined);
    // wherever back went, the checkout shows the challenge again
    await page.goto(`${p.checkout_url}?lang=en`);
    await page
      .frameLocator('#challenge-frame')
      .frameLocator('#challengeFrame')
      .locator('#approve')
      .click({ timeout: 30_000 });
    await outcome(page, 'Payment succeeded');
    expect(payments(p.id)).to.have.length(1);
    await page.close();
  });

  it('after every flow: no request to the service carried a card number or security code, and no page threw', () => {
    // every request to the service's origin, from every page
    expect(toService.length).to.be.greaterThan(10);
    for (const r of toService) {
      const seen = `${decodeURIComponent(r.url)} ${r.body ?? ''}`.replace(/\s/g, '');
      for (const number of CARDS) expect(seen, r.url).not.to.include(number);
      expect(seen, r.url).not.to.match(new RegExp(`(^|[^0-9a-f])${CSC}([^0-9a-f]|$)`));
    }
    expect(errors, 'JavaScript errors on the pages').to.deep.equal([]);
  });
});
