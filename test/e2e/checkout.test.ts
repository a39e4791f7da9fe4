import { expect } from 'chai';
import type { FrameLocator, Page, Request } from 'playwright-core';
import { ManualClock } from '../../shared/clock';
import { cardPaymentKind } from '../../shared/cards/kind';
import { createContext } from '../../shared/context';
import { sweepOpen } from '../../shared/operations/sweep';
import { createCardPayment, paymentRow, startCardEnv, tokenFor, type CardTestEnv } from '../helpers/cards';
import type { MerchantFixture } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { launchChromium, type Browser } from './browser';

/**
 * The hosted checkout in a real browser (Debian's Chromium through playwright-core): each flow
 * of docs/decisions.md#cards-hosted-checkout from the checkout URL to the merchant's return URL and webhook, with
 * the three origins on their own ports (service, sandbox vault, sandbox acquirer) and every pool
 * the flow needs as a real process. Every request the page sends is recorded: none that reaches
 * the service may carry a card number.
 */
describe('hosted checkout in Chromium (e2e)', function () {
  this.timeout(120_000);
  let browser: Browser;
  let c: CardTestEnv;
  let shop: MerchantFixture;
  let merchantSite: Receiver;
  const requests: { url: string; method: string; body: string | null; page: string }[] = [];
  const CARDS = ['4242424242424242', '4000000000003220', '4000000000000002', '4242424242424241'];

  before(async () => {
    // first, so a machine without Chromium fails here with the install command
    browser = await launchChromium();
    c = await startCardEnv();
    await c.env.spawn('workers/webhook-sender/index.ts');
    merchantSite = await startReceiver();
    shop = await c.env.merchant({ scope: 'full', merchant: { name: 'Kin Shop' } });
    const hook = await c.env.admin('POST', '/admin/webhooks', {
      merchant_id: shop.merchant.id,
      url: `${merchantSite.url}/webhooks`,
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
  });
  after(async () => {
    await browser?.close();
    await merchantSite?.close();
    await c?.env.close();
  });

  const service = () => new URL(c.env.baseUrl).origin;

  async function newPage(): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('request', (r: Request) =>
      requests.push({ url: r.url(), method: r.method(), body: r.postData(), page: page.url() }),
    );
    return page;
  }

  async function aPayment(over: Record<string, unknown> = {}) {
    return createCardPayment(shop.client, { return_url: `${merchantSite.url}/return`, ...over });
  }

  async function enterCard(page: Page, number: string) {
    const fields: FrameLocator = page.frameLocator('#card-frame');
    await fields.getByLabel(/Numéro de carte|Card number/).fill(number);
    await fields.getByLabel(/Expiration|Expiry/).fill('1234');
    await fields.getByLabel(/Cryptogramme|Security code/).fill('123');
  }

  async function webhookFor(id: string, type: string) {
    return eventually(
      async () =>
        merchantSite
          .at('/webhooks')
          .map((r) => JSON.parse(r.raw.toString()))
          .find((e) => e.type === type && e.data.object.id === id),
      20_000,
      100,
    );
  }

  it('4242 4242 4242 4242 (French): pays, shows the success, returns to return_url?payment_id&status, and the merchant gets payment.succeeded', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url);
    expect(await page.locator('html').count()).to.equal(1);
    expect(await page.getAttribute('html', 'lang')).to.equal('fr');
    expect(await page.locator('.merchant').innerText()).to.include('Kin Shop');
    expect(await page.locator('#amount').innerText()).to.equal('25.00 USD');
    expect(await page.locator('.reference').innerText()).to.include(p.reference);
    await enterCard(page, '4242 4242 4242 4242');
    await page.getByRole('button', { name: /^Payer 25\.00 USD/ }).click();
    await page.getByRole('heading', { name: 'Paiement réussi' }).waitFor({ timeout: 20_000 });
    await page.waitForURL(`${merchantSite.url}/return?payment_id=${p.id}&status=succeeded`, { timeout: 20_000 });
    expect((await paymentRow(c.env, p.id)).status).to.equal('succeeded');
    const event = await webhookFor(p.id, 'payment.succeeded');
    expect(event.data.object.customer).to.include({ email: 'client@shop.example', name: 'Amani Client' });
    expect(event.data.object.card).to.include({ brand: 'visa', last4: '4242' });
    // the outcome is final: a second pay from the page is 409
    const { token } = await tokenFor(c.vaultUrl, p.id);
    await page.goto(p.checkout_url);
    const status = await page.evaluate(
      async ([id, t]) =>
        (
          await fetch(`/checkout/${id}/pay`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ token: t }),
          })
        ).status,
      [p.id, token],
    );
    expect(status).to.equal(409);
    await page.close();
  });

  it('4000 0000 0000 3220 (English): the 3-D Secure challenge in its frame, "Complete authentication": succeeded and back to the merchant', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    expect(await page.getAttribute('html', 'lang')).to.equal('en');
    await enterCard(page, '4000000000003220');
    await page.getByRole('button', { name: /^Pay 25\.00 USD/ }).click();
    const issuer = page.frameLocator('#challenge-frame');
    await issuer.getByText('TEST PAGE').waitFor({ timeout: 20_000 });
    expect(await issuer.locator('.amount').innerText()).to.equal('25.00 USD');
    expect((await paymentRow(c.env, p.id)).status).to.equal('processing');
    await issuer.getByRole('button', { name: 'Complete authentication' }).click();
    await page.getByRole('heading', { name: 'Payment succeeded' }).waitFor({ timeout: 20_000 });
    await page.waitForURL(`${merchantSite.url}/return?payment_id=${p.id}&status=succeeded`, { timeout: 20_000 });
    await webhookFor(p.id, 'payment.succeeded');
    await page.close();
  });

  it('4000 0000 0000 3220, "Fail authentication": failed authentication-failed, said plainly, payment.failed', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url, { waitUntil: 'load' });
    await enterCard(page, '4000000000003220');
    await page.getByRole('button', { name: /^Payer/ }).click();
    await page
      .frameLocator('#challenge-frame')
      .getByRole('button', { name: 'Fail authentication' })
      .click({ timeout: 20_000 });
    await page.getByRole('heading', { name: 'Paiement refusé' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('.outcome').innerText()).to.include('authentification 3-D Secure a échoué');
    expect(await page.getByRole('link', { name: 'Retour chez Kin Shop' }).getAttribute('href')).to.equal(
      `${merchantSite.url}/return?payment_id=${p.id}&status=failed`,
    );
    expect((await paymentRow(c.env, p.id)).failure_code).to.equal('authentication-failed');
    await webhookFor(p.id, 'payment.failed');
    await page.close();
  });

  it('the 3-D Secure full-page fallback: the issuer page opened in the window comes back to the checkout with the outcome', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url);
    await enterCard(page, '4000000000003220');
    await page.getByRole('button', { name: /^Payer/ }).click();
    await page.getByRole('link', { name: /Ouvrir la page d’authentification/ }).click({ timeout: 20_000 });
    expect(new URL(page.url()).origin).to.equal(new URL(c.providerUrl).origin);
    await page.getByRole('button', { name: 'Complete authentication' }).click();
    // the issuer sends the window to /checkout/{id}/3ds-return, which goes back to the checkout page
    await page.getByRole('heading', { name: 'Paiement réussi' }).waitFor({ timeout: 20_000 });
    expect(await page.getByRole('link', { name: 'Retour chez Kin Shop' }).getAttribute('href')).to.include(
      'status=succeeded',
    );
    await page.close();
  });

  it('4000 0000 0000 0002: declined, the page says so and links back; payment.failed card-declined', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '4000000000000002');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.getByRole('heading', { name: 'Payment declined' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('.outcome').innerText()).to.include('Your card was declined');
    await page.waitForURL(`${merchantSite.url}/return?payment_id=${p.id}&status=failed`, { timeout: 20_000 });
    const event = await webhookFor(p.id, 'payment.failed');
    expect(event.data.object.failure_code).to.equal('card-declined');
    await page.close();
  });

  it('an invalid card stays on the page with the error announced (aria-live), and nothing reaches the service', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(`${p.checkout_url}?lang=en`);
    await enterCard(page, '4242424242424241');
    await page.getByRole('button', { name: /^Pay/ }).click();
    const fields = page.frameLocator('#card-frame');
    await fields.getByText('Invalid card number.').waitFor();
    expect(await fields.locator('#card-error').getAttribute('aria-live')).to.equal('assertive');
    expect(await page.locator('#pay-status').innerText()).to.equal('Please check your card details.');
    expect(await page.getByRole('button', { name: /^Pay/ }).isEnabled()).to.equal(true);
    expect((await paymentRow(c.env, p.id)).status).to.equal('pending');
    await page.close();
  });

  it('an expired payment: its page shows the outcome and the way back, no card form', async () => {
    const p = await aPayment();
    const ctx = createContext({
      role: 'worker',
      name: 'e2e-expiry',
      config: c.env.config,
      clock: new ManualClock(Date.now() + 31 * 60_000),
    });
    try {
      await sweepOpen(ctx, cardPaymentKind);
    } finally {
      await ctx.close();
    }
    const page = await newPage();
    await page.goto(p.checkout_url);
    await page.getByRole('heading', { name: 'Paiement expiré' }).waitFor();
    expect(await page.locator('#card-frame').count()).to.equal(0);
    expect(await page.getByRole('link', { name: 'Retour chez Kin Shop' }).getAttribute('href')).to.equal(
      `${merchantSite.url}/return?payment_id=${p.id}&status=cancelled`,
    );
    await webhookFor(p.id, 'payment.cancelled');
    await page.close();
  });

  it('keyboard only: Tab through the card fields to the pay button, Enter pays, Tab and Enter return to the merchant', async () => {
    const p = await aPayment();
    const page = await newPage();
    await page.goto(p.checkout_url);
    const focused = async () => {
      for (const f of [page.mainFrame(), ...page.frames()]) {
        const id = await f
          .evaluate(() => {
            const d = (globalThis as any).document;
            return d.hasFocus() && d.activeElement ? d.activeElement.id || d.activeElement.tagName : null;
          })
          .catch(() => null);
        if (id && id !== 'IFRAME' && id !== 'BODY' && id !== 'card-frame') return id;
      }
      return null;
    };
    const tabTo = async (id: string) => {
      for (let i = 0; i < 10; i++) {
        await page.keyboard.press('Tab');
        if ((await focused()) === id) return;
      }
      throw new Error(`Tab never reached #${id} (at ${await focused()})`);
    };
    await tabTo('cc-number');
    await page.keyboard.type('4242424242424242');
    await tabTo('cc-exp');
    await page.keyboard.type('1234');
    await tabTo('cc-csc');
    await page.keyboard.type('123');
    await tabTo('pay-button');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Paiement réussi' }).waitFor({ timeout: 20_000 });
    // on the outcome page: the way back is reached by keyboard too
    await page.goto(p.checkout_url);
    await tabTo('return-link');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${merchantSite.url}/return?payment_id=${p.id}&status=succeeded`, { timeout: 20_000 });
    await page.close();
  });

  it('messages from a wrong origin to the page or to the card iframe are ignored', async () => {
    const p = await aPayment();
    // a page of another origin (the merchant's site) holding a window on the checkout
    const evil = await newPage();
    await evil.goto(`${merchantSite.url}/somewhere`);
    const [checkout] = await Promise.all([
      evil.waitForEvent('popup'),
      evil.evaluate((url) => void (globalThis as any).open(url, 'checkout'), p.checkout_url),
    ]);
    await checkout.waitForLoadState('load');
    await checkout.frameLocator('#card-frame').getByLabel('Numéro de carte').waitFor();
    const before = requests.length;
    await evil.evaluate(() => {
      const w = (globalThis as any).open('', 'checkout');
      // a forged token to the page, and a request for a token to the card fields
      w.postMessage({ type: 'token', token: 'tok_forgedforgedforged' }, '*');
      w.postMessage({ type: 'submit' }, '*');
      w.frames[0].postMessage({ type: 'tokenize' }, '*');
    });
    await new Promise((r) => setTimeout(r, 1500));
    const sent = requests.slice(before).filter((r) => r.method === 'POST');
    expect(sent, JSON.stringify(sent)).to.deep.equal([]);
    expect(await checkout.getByRole('button', { name: /^Payer/ }).isEnabled()).to.equal(true);
    expect(await paymentRow(c.env, p.id)).to.include({ status: 'pending', checkout_token: null, checkout_error: null });
    await checkout.close();
    await evil.close();
  });

  it('page, script, stylesheet and card iframe weigh under 50 KB in all (printed)', async () => {
    const p = await aPayment();
    const page = await browser.context.newPage();
    const sizes: Record<string, number> = {};
    page.on('response', async (res) => {
      const type = res.request().resourceType();
      if (!['document', 'script', 'stylesheet', 'font', 'image'].includes(type)) return;
      const body = await res.body().catch(() => Buffer.alloc(0));
      sizes[new URL(res.url()).origin + new URL(res.url()).pathname] = body.length;
    });
    await page.goto(p.checkout_url, { waitUntil: 'networkidle' });
    await page.frameLocator('#card-frame').getByLabel('Numéro de carte').waitFor();
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    const lines = Object.entries(sizes).map(([u, n]) => `    ${u}: ${n} B`);
    console.log(
      `      checkout weight: ${total} B (${(total / 1024).toFixed(1)} KB) in ${lines.length} files\n${lines.join('\n')}`,
    );
    expect(Object.keys(sizes)).to.have.length(6);
    expect(total).to.be.below(50 * 1024);
    await page.close();
  });

  it('no request the page sent to the service carried a card number (every request of every flow recorded)', () => {
    expect(requests.length).to.be.greaterThan(30);
    const toService = requests.filter((r) => new URL(r.url).origin === service());
    expect(toService.some((r) => r.method === 'POST' && /\/pay$/.test(r.url))).to.equal(true);
    for (const r of toService) {
      // every number typed in any flow, in any spelling (spaces and dashes dropped)
      const text = `${r.url}\n${r.body ?? ''}`.replace(/[\s-]/g, '');
      for (const n of CARDS) expect(text, `${r.method} ${r.url}`).not.to.include(n);
    }
    // the card went to the vault, and only there
    const toVault = requests.filter((r) => new URL(r.url).origin === new URL(c.vaultUrl).origin && r.method === 'POST');
    expect(toVault.some((r) => (r.body ?? '').includes('4242'))).to.equal(true);
  });
});
