import { expect } from 'chai';
import { parseSecretsKeys } from '../../shared/config';
import { maskPhone, parseAmount } from '../../shared/checkout/html';
import { attemptOf, attemptRef, checkFormToken, FORM_TOKEN_TTL_S, issueFormToken } from '../../shared/links/formToken';
import { inactiveReason, type PaymentLinkRead } from '../../shared/links/view';

const keys = parseSecretsKeys('k1:' + Buffer.alloc(32, 1).toString('base64'));
const rotated = parseSecretsKeys(
  `k2:${Buffer.alloc(32, 2).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}`,
);
const LINK = 'plink_0b7f7a4e-3c1d-4a57-9d0e-0d5c2f9c1a11';
const OTHER = 'plink_1b7f7a4e-3c1d-4a57-9d0e-0d5c2f9c1a11';

describe('payment links (pure parts)', () => {
  const now = 1_800_000_000_000;

  it('masks a phone number the same way on every page', () => {
    expect(maskPhone('243812345678')).to.equal('+243 81• ••• •678');
    expect(maskPhone('243990000001')).to.equal('+243 99• ••• •001');
    expect(maskPhone('not a number')).to.equal('•••');
  });

  it('reads typed amounts as minor units', () => {
    expect(parseAmount('25')).to.equal(2_500);
    expect(parseAmount('25.5')).to.equal(2_550);
    expect(parseAmount(' 25,05 ')).to.equal(2_505);
    for (const bad of ['', '0', '0.00', '-1', '1.234', '1e3', 'abc', undefined])
      expect(parseAmount(bad), String(bad)).to.equal(null);
  });

  it('form tokens: bound to their link, signed, expiring, verified under every listed key', () => {
    const token = issueFormToken(keys, LINK, now);
    const ok = checkFormToken(keys, LINK, token, now + 1000);
    expect(ok.ok).to.equal(true);
    expect(checkFormToken(keys, OTHER, token, now)).to.deep.equal({ ok: false, reason: 'invalid' });
    expect(checkFormToken(keys, LINK, token, now + FORM_TOKEN_TTL_S * 1000)).to.deep.equal({
      ok: false,
      reason: 'expired',
    });
    const [attempt, expires, tag] = token.split('.');
    expect(checkFormToken(keys, LINK, `${attempt}.${Number(expires) + 600}.${tag}`, now)).to.deep.equal({
      ok: false,
      reason: 'invalid',
    });
    for (const junk of [undefined, '', 'x', `${attempt}.${expires}`, `${token}.x`])
      expect(checkFormToken(keys, LINK, junk, now).ok, String(junk)).to.equal(false);
    expect(checkFormToken(rotated, LINK, token, now).ok, 'an older key still verifies').to.equal(true);
  });

  it('attempt addresses: only the service makes one, for its link', () => {
    const ref = attemptRef(keys, LINK, '2d1ed5f0-0619-41e4-a35d-108165d54864');
    expect(attemptOf(keys, LINK, ref)).to.equal('2d1ed5f0-0619-41e4-a35d-108165d54864');
    expect(attemptOf(keys, OTHER, ref)).to.equal(null);
    expect(attemptOf(keys, LINK, ref.replace('2d1e', '3d1e'))).to.equal(null);
  });

  it('a link takes payments until deactivated, expired or (single use) paid', () => {
    const l = { deactivated: null, expires_at: null, single_use: false, used_up: false } as unknown as PaymentLinkRead;
    expect(inactiveReason(l, now)).to.equal(null);
    expect(inactiveReason({ ...l, used_up: true }, now), 'a reusable link is never used up').to.equal(null);
    expect(inactiveReason({ ...l, single_use: true, used_up: true }, now)).to.equal('used_up');
    expect(inactiveReason({ ...l, expires_at: now / 1000 }, now)).to.equal('expired');
    expect(inactiveReason({ ...l, expires_at: now / 1000 + 1 }, now)).to.equal(null);
    expect(inactiveReason({ ...l, deactivated: 1, expires_at: 1 }, now)).to.equal('deactivated');
  });
});
