import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startCardEnv, type CardTestEnv } from '../helpers/cards';
import type { MerchantFixture } from '../helpers/env';
import { aLink } from '../helpers/links';
import { startSandbox } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { freePort } from '../../scripts/lib/ports';
import { eventually } from '../../scripts/lib/processes';
import { launchChromium, type Browser } from './browser';

/**
 * The payment-link page in a real browser (Debian's Chromium through playwright-core), docs/decisions.md#payment-links:
 * mobile money through the sandbox provider (its callback delay cut to 300 ms), the card through
 * the card checkout with 3-D Secure, each flow from the link's URL to its outcome, with and
 * without JavaScript; the first page's weight and its render time on a throttled 3G profile,
 * measured here. No request the page makes carries the phone number or the payment id.
 */

/** Chrome DevTools' "Fast 3G" profile: 562.5 ms latency, 1.44 Mbit/s down, 675 kbit/s up. */
const THREE_G = {
  offline: false,
  latency: 562.5,
  downloadThroughput: (1.6 * 1024 * 1024 * 0.9) / 8,
  uploadThroughput: (750 * 1024 * 0.9) / 8,
};

describe('payment-link page in Chromium (e2e)', function () {
  this.timeout(120_000);
  let browser: Browser;
  let noJs: Browser;
  let c: CardTestEnv;
  let shop: MerchantFixture;
  let merchantSite: Receiver;
  const urls: string[] = [];

  before(async () => {
    browser = await launchChromium();
    noJs = await launchChromium({ javaScriptEnabled: false });
    const sandboxPort = await freePort();
    c = await startCardEnv({
      SANDBOX_PROVIDER_PORT: String(sandboxPort),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${sandboxPort}`,
      SANDBOX_CALLBACK_DELAY_MS: '300',
    });
    await startSandbox(c.env, { SANDBOX_PROVIDER_PORT: String(sandboxPort) });
    await c.env.spawn('workers/provider-push/index.ts');
    merchantSite = await startReceiver();
    shop = await c.env.merchant({ scope: 'payments', merchant: { name: 'Kin Shop' } });
  });
  after(async () => {
    await browser?.close();
    await noJs?.close();
    await merchantSite?.close();
    await c?.env.close();
  });

  async function newPage(b = browser): Promise<Page> {
    const page = await b.context.newPage();
    page.on('request', (r) => urls.push(r.url()));
    return page;
  }

  const link = (over: Record<string, unknown> = {}) =>
    aLink(shop.client, { return_url: `${merchantSite.url}/return`, ...over });
  const paymentsOf = (id: string) => c.env.services.db('payments').where({ payment_link: id });

  it('mobile money with 243990000001 (English by the switch): "Confirm on your phone", then the receipt, then the return link', async () => {
    const l = await link();
    const page = await newPage();
    await page.goto(l.url);
    expect(await page.getAttribute('html', 'lang')).to.equal('fr');
    await page.getByRole('link', { name: 'English' }).click();
    expect(await page.getAttribute('html', 'lang')).to.equal('en');
    expect(await page.locator('#amount').innerText()).to.equal('25.00 USD');
    await page.getByLabel('Phone number').fill('+243 99 000 0001');
    expect(await page.locator('#operator-detected').innerText()).to.equal('Operator detected: Airtel Money');
    expect(await page.getByLabel('Operator').inputValue()).to.equal('airtel');
    await page.getByRole('button', { name: 'Pay 25.00 USD by mobile money' }).click();
    await page.getByRole('heading', { name: 'Confirm on your phone' }).waitFor();
    expect(await page.locator('#confirm-text').innerText()).to.include('+243 99• ••• •001');
    expect(await page.locator('.amount-due').innerText()).to.equal('25.00 USD');
    const at = page.url();
    // in place: the same document, no navigation, until the outcome
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    expect(page.url()).to.equal(at);
    const [p] = await paymentsOf(l.id);
    expect(await page.locator('#receipt-amount').innerText()).to.equal('25.00 USD');
    expect(await page.locator('#receipt-provider-ref').innerText()).to.equal(p.provider_ref);
    expect(await page.locator('#receipt-date').innerText()).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    await page.getByRole('link', { name: 'Back to Kin Shop' }).click();
    await page.waitForURL(`${merchantSite.url}/return?payment_link=${l.id}&reference=${l.id}-1&status=succeeded`);
    await page.close();
  });

  it('the decline number 243990000002: the failure in plain words, and "try again" pays', async () => {
    const l = await link();
    const page = await newPage();
    await page.goto(`${l.url}?lang=en`);
    await page.getByLabel('Phone number').fill('0990000002');
    await page.getByRole('button', { name: /by mobile money/ }).click();
    await page.getByRole('heading', { name: 'Payment failed' }).waitFor({ timeout: 15_000 });
    expect(await page.locator('.outcome p').innerText()).to.equal(
      'Your mobile money balance is too low. Nothing was charged.',
    );
    await page.getByRole('link', { name: 'Try again' }).click();
    await page.getByLabel('Phone number').fill('0990000001');
    await page.getByRole('button', { name: /by mobile money/ }).click();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    expect((await paymentsOf(l.id)).map((p) => p.status).sort()).to.deep.equal(['failed', 'succeeded']);
    await page.close();
  });

  it('an open amount within its bounds (the operator chosen by hand)', async () => {
    const l = await link({ amount: undefined, min_amount: 1_000, max_amount: 10_000, currency: 'CDF' });
    const page = await newPage();
    await page.goto(`${l.url}?lang=en`);
    expect(await page.locator('#amount').innerText()).to.equal('Amount of your choice');
    await page.locator('#mm-amount').fill('5');
    await page.getByLabel('Phone number').fill('0990000011');
    await page.getByRole('button', { name: 'Pay by mobile money' }).click();
    await page.getByRole('alert').filter({ hasText: 'The amount is outside the limits shown' }).waitFor();
    await page.locator('#mm-amount').fill('42,50');
    await page.getByLabel('Operator').selectOption('vodacom');
    await page.getByRole('button', { name: 'Pay by mobile money' }).click();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    const [p] = await paymentsOf(l.id);
    expect(p).to.include({ amount: 4_250, currency: 'CDF', operator: 'vodacom' });
    await page.close();
  });

  it('a double submit makes one payment', async () => {
    const l = await link();
    const page = await newPage();
    await page.goto(`${l.url}?lang=en`);
    await page.getByLabel('Phone number').fill('0990000021');
    // the same form posted twice at once, as a double tap on a slow network sends it, then once more by its button
    const answers: string[] = await page.evaluate(`(() => {
      const body = new URLSearchParams(new FormData(document.getElementById('mm-form'))).toString();
      const post = () => fetch(location.pathname, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body }).then((r) => r.url);
      return Promise.all([post(), post()]);
    })()`);
    await page.getByRole('button', { name: /by mobile money/ }).click();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    expect(new Set([...answers, page.url()]).size, 'the same attempt page each time').to.equal(1);
    expect(await paymentsOf(l.id)).to.have.length(1);
    await page.close();
  });

  it('without JavaScript: a form POST, then a status page that refreshes itself, to the success', async () => {
    const l = await link();
    const page = await newPage(noJs);
    await page.goto(`${l.url}?lang=en`);
    await page.getByLabel('Phone number').fill('243990000031');
    await page.getByRole('button', { name: /by mobile money/ }).click();
    await page.getByRole('heading', { name: 'Confirm on your phone' }).waitFor();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    expect(await page.getByRole('link', { name: 'Back to Kin Shop' }).getAttribute('href')).to.include(
      `${merchantSite.url}/return`,
    );
    await page.close();
  });

  it('weighs under 30 KB over the wire and renders in under 2 s on a throttled 3G profile', async () => {
    const l = await link();
    const page = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    await cdp.send('Network.emulateNetworkConditions', THREE_G);
    const bytes = new Map<string, number>();
    const origins = new Set<string>();
    cdp.on('Network.requestWillBeSent', (e: any) => origins.add(new URL(e.request.url).origin));
    cdp.on('Network.loadingFinished', (e: any) => bytes.set(e.requestId, e.encodedDataLength));
    const started = Date.now();
    await page.goto(l.url, { waitUntil: 'load' });
    const loadMs = Date.now() - started;
    const fcp = await page.evaluate(
      () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Infinity,
    );
    await eventually(async () => bytes.size >= 3 || undefined, 5_000, 50);
    const total = [...bytes.values()].reduce((a, b) => a + b, 0);
    console.log(
      `      page weight ${total} bytes over the wire (${bytes.size} requests); on Fast 3G: first contentful paint ${Math.round(fcp)} ms, load ${loadMs} ms`,
    );
    expect(total).to.be.below(30 * 1024);
    expect(fcp).to.be.below(2_000);
    expect(loadMs).to.be.below(2_000);
    expect([...origins]).to.deep.equal([new URL(c.env.baseUrl).origin]);
    expect(await page.evaluate('document.fonts.size')).to.equal(0);
    await page.close();
  });

  it('an expired, deactivated or used-up link shows its page with status 410', async () => {
    const deactivated = await link();
    expect((await shop.client.post(`/v1/payment_links/${deactivated.id}/deactivate`)).status).to.equal(200);
    const expired = await link({ expires_at: Math.floor(Date.now() / 1000) + 1 });
    const single = await link({ single_use: true });
    const page = await newPage();
    await page.goto(`${single.url}?lang=en`);
    await page.getByLabel('Phone number').fill('0990000041');
    await page.getByRole('button', { name: /by mobile money/ }).click();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 15_000 });
    await new Promise((r) => setTimeout(r, 1_000));
    for (const [l, text] of [
      [deactivated, 'The merchant has deactivated this payment link.'],
      [expired, 'This payment link has expired.'],
      [single, 'This payment link has already been paid.'],
    ] as const) {
      const res = await page.goto(`${l.url}?lang=en`);
      expect(res!.status(), l.id).to.equal(410);
      await page.getByRole('heading', { name: 'This payment link is no longer active' }).waitFor();
      expect(await page.locator('main').innerText()).to.include(text);
    }
    await page.close();
  });

  it('the card method hands over to the card checkout, which pays with 3-D Secure (4000 0000 0000 3220)', async () => {
    const l = await link();
    const page = await newPage();
    await page.goto(`${l.url}?lang=en`);
    await page.getByLabel('Full name').fill('Amani Client');
    await page.getByLabel('Email address').fill('amani@example.cd');
    await page.getByRole('button', { name: 'Continue to card payment' }).click();
    await page.waitForURL(/\/checkout\/pay_[0-9a-f-]+\?lang=en$/);
    const [p] = await paymentsOf(l.id);
    expect(p).to.include({
      method: 'card',
      status: 'pending',
      amount: 2_500,
      reference: `${l.id}-1`,
      customer_email: 'amani@example.cd',
    });
    const fields = page.frameLocator('#card-frame');
    await fields.getByLabel(/Card number/).fill('4000000000003220');
    await fields.getByLabel(/Expiry/).fill('1234');
    await fields.getByLabel(/Security code/).fill('123');
    await page.getByRole('button', { name: /^Pay 25\.00 USD/ }).click();
    await page
      .frameLocator('#challenge-frame')
      .getByRole('button', { name: 'Complete authentication' })
      .click({ timeout: 20_000 });
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 20_000 });
    await page.waitForURL(`${merchantSite.url}/return?payment_id=${p.id}&status=succeeded`, { timeout: 20_000 });
    await page.close();
  });

  it('no URL the link pages build carries a phone number or a payment id', () => {
    const linkPages = urls.filter((u) => new URL(u).pathname.startsWith('/pay/'));
    expect(linkPages.length).to.be.greaterThan(10);
    for (const u of linkPages) expect(u, u).not.to.match(/pay_|2439900000|990000/);
  });
});
