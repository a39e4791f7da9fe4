import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { launchChromium, type Browser } from './browser';

/**
 * The API reference page in a real headless Chromium (the system's /usr/bin/chromium, never a
 * downloaded browser): Redoc, served from node_modules, renders the OpenAPI document under the
 * page's CSP, lists POST /v1/payments and shows the signing and webhook recipes, with no request
 * leaving the service's origin and no CSP violation.
 */
describe('API reference page in headless Chromium (GET /docs)', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let browser: Browser;

  before(async () => {
    env = await startTestEnv();
    browser = await launchChromium({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  });
  after(async () => {
    await browser?.close();
    await env?.close();
  });

  it('renders the document and lists POST /v1/payments, the recipes included, within its CSP and its origin', async () => {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    const foreign: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith(env.baseUrl) && !url.startsWith('blob:') && !url.startsWith('data:')) foreign.push(url);
    });
    const res = await page.goto(`${env.baseUrl}/docs`, { waitUntil: 'load' });
    expect(res?.status()).to.equal(200);

    // Redoc's operation entry: the summary in the menu and the method + path in the middle panel
    const operation = page.locator('[id="tag/Payments/operation/createPayment"]');
    await operation.waitFor({ state: 'visible', timeout: 60_000 });
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT });
    const text = await operation.innerText();
    expect(text).to.match(/post/i);
    expect(text).to.include('/v1/payments');
    const body = await page.locator('body').innerText();
    expect(body).to.include('Signing requests').and.include('Webhooks');
    expect(body).to.include('<timestamp>.<METHOD>.<path>.<raw body>');
    for (const summary of ['List payments', 'Refund a payment', 'Pay out to a mobile-money wallet', 'List events'])
      expect(body).to.include(summary);

    expect(foreign, 'requests outside the service origin').to.deep.equal([]);
    expect(problems, 'console errors or CSP violations').to.deep.equal([]);
    await page.close();
  });
});
