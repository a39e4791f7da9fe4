import { expect } from 'chai';
import { pickLang } from '../../shared/checkout/i18n';
import { escapeHtml, formatAmount, maskToken } from '../../shared/checkout/html';
import { brandOf, luhnValid, parseExpiry, sandboxCardBehaviour } from '../../shared/cards/sandbox/cards';

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
