import { expect } from 'chai';
import { pickLang } from '../../shared/checkout/i18n';
import { escapeHtml, formatAmount, maskToken } from '../../shared/checkout/html';
import { brandOf, luhnValid, parseExpiry, sandboxCardBehaviour } from '../../shared/cards/sandbox/cards';
import type { CheckoutPayment } from '../../shared/cards/checkout';
import { checkoutCsp } from '../../shared/checkout/frame';
import { checkoutPage } from '../../api/checkout/pages';

describe('cards: pure rules of the checkout and the sandboxes', () => {
  it('shows amounts as minor units / 100 with the currency', () => {
    expect(formatAmount(2_500, 'USD')).to.equal('25.00 USD');
    expect(formatAmount(1, 'CDF')).to.equal('0.01 CDF');
    expect(formatAmount(1_000_000_000_000, 'CDF')).to.equal('10000000000.00 CDF');
  });

  it('escapes text for HTML content and attributes', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).to.equal(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('picks the language: ?lang first, then the best of fr/en in Accept-Language, else French', () => {
    expect(pickLang(undefined, undefined)).to.equal('fr');
    expect(pickLang(undefined, 'en-US,en;q=0.9')).to.equal('en');
    expect(pickLang(undefined, 'de-DE, en;q=0.5, fr;q=0.7')).to.equal('fr');
    expect(pickLang(undefined, 'ln-CD, sw')).to.equal('fr');
    expect(pickLang('en', 'fr')).to.equal('en');
    expect(pickLang('fr', 'en')).to.equal('fr');
    expect(pickLang('de', 'en')).to.equal('en');
    expect(pickLang(['en', 'fr'], undefined)).to.equal('fr');
    expect(pickLang(undefined, 'en;q=abc, fr;q=0.1')).to.equal('fr');
  });

  it('masks tokens in logs to their first characters', () => {
    expect(maskToken('tok_abcdefghijklmnopqrstuvwx')).to.equal('tok_abcd…');
  });

  it('the sandbox card table and the vault checks (Luhn, future expiry, brand)', () => {
    expect(sandboxCardBehaviour('4242424242424242')).to.equal('approve');
    expect(sandboxCardBehaviour('4000000000003220')).to.equal('challenge');
    expect(sandboxCardBehaviour('4000000000000002')).to.equal('decline');
    expect(sandboxCardBehaviour('5555555555554444')).to.equal('approve');
    for (const n of ['4242424242424242', '4000000000003220', '4000000000000002', '5555555555554444', '378282246310005'])
      expect(luhnValid(n), n).to.equal(true);
    for (const n of ['4242424242424241', '42424242', '4242 4242 4242 4242', '', 'abcd'])
      expect(luhnValid(n), n).to.equal(false);
    expect(brandOf('4242424242424242')).to.equal('visa');
    expect(brandOf('5555555555554444')).to.equal('mastercard');
    expect(brandOf('2223003122003222')).to.equal('mastercard');
    expect(brandOf('378282246310005')).to.equal('amex');
    const now = new Date(Date.UTC(2026, 10, 25));
    expect(parseExpiry('12/34', now)).to.deep.equal({ month: 12, year: 2034 });
    expect(parseExpiry('11/26', now)).to.deep.equal({ month: 11, year: 2026 });
    expect(parseExpiry('10/26', now)).to.equal(null);
    expect(parseExpiry('13/30', now)).to.equal(null);
    expect(parseExpiry('1/30', now)).to.equal(null);
    expect(parseExpiry('12 / 2030', now)).to.deep.equal({ month: 12, year: 2030 });
  });
});

describe('the card form a card connector asks for (shared/providers/cardConnector.ts CardForm)', () => {
  const payment = {
    id: 'pay_00000000-0000-4000-8000-000000000001',
    status: 'pending',
    amount_charged: 2_500,
    currency: 'USD',
    description: null,
    reference: 'order-1',
    merchant_name: 'Shop',
    checkout_token: null,
    sent_at: null,
    checkout_error: null,
  } as unknown as CheckoutPayment;

  it("a vault frame: the vault's iframe and its origin for the page's script", () => {
    const html = checkoutPage(
      payment,
      'en',
      {
        kind: 'vault-frame',
        frameUrl: 'https://vault.example/fields?payment=x&lang=en',
        vaultOrigin: 'https://vault.example',
      },
      false,
    );
    expect(html).to.include('data-state="form"').and.include('data-vault-origin="https://vault.example"');
    expect(html).to.include('<iframe id="card-frame" src="https://vault.example/fields?payment=x&amp;lang=en"');
  });

  it("a hosted session: the gateway's script, its session id and data for the page, no vault frame", () => {
    const html = checkoutPage(
      payment,
      'en',
      {
        kind: 'hosted-session',
        scriptUrl: 'https://gw.example/form/version/100/merchant/TEST1/session.js',
        sessionId: 'SESSION0002',
        data: { 'gateway-origin': 'https://gw.example' },
      },
      false,
    );
    expect(html).to.include('<script src="https://gw.example/form/version/100/merchant/TEST1/session.js"></script>');
    expect(html).to.include('data-state="hosted-session"').and.include('data-session="SESSION0002"');
    expect(html).to.include('data-gateway-origin="https://gw.example"').and.include('id="card-fields"');
    expect(html).not.to.include('card-frame');
    // no connector can take the card now: the page says so, with no form
    expect(checkoutPage(payment, 'en', null, false))
      .to.include('data-state="unavailable"')
      .and.not.include('pay-form');
  });

  it("the page's CSP: its own scripts and styles, and the connector's frame and script origins only", () => {
    expect(checkoutCsp(['https://vault.example', 'https://acquirer.example'])).to.include(
      "script-src 'self'; style-src 'self'",
    );
    const csp = checkoutCsp(['https://gw.example'], ['https://gw.example']);
    expect(csp).to.include("script-src 'self' https://gw.example;").and.include("frame-src 'self' https://gw.example;");
    expect(csp).to.include("default-src 'none'").and.include("frame-ancestors 'none'");
  });
});
