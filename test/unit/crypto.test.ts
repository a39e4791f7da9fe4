import { expect } from 'chai';
import { decryptSecret, encryptSecret, hashApiKey, safeEqual } from '../../shared/crypto/secrets';
import { parseSecretsKeys } from '../../shared/config';
import { isId, newEventId, newId, UUID_V4_RE } from '../../shared/ids';

const oldKey = parseSecretsKeys(`old:${Buffer.alloc(32, 1).toString('base64')}`);
const newKey = parseSecretsKeys(`new:${Buffer.alloc(32, 2).toString('base64')}`);

describe('secrets at rest', () => {
  it('round-trips through AES-256-GCM and never stores the plaintext', () => {
    const enc = encryptSecret('sk_supersecret', oldKey);
    expect(enc.keyId).to.equal('old');
    expect(enc.ciphertext).not.to.include('supersecret');
    expect(Buffer.from(enc.ciphertext, 'base64').toString('latin1')).not.to.include('supersecret');
    expect(decryptSecret(enc, oldKey)).to.equal('sk_supersecret');
  });

  it('uses a fresh IV each time', () => {
    expect(encryptSecret('same', oldKey).ciphertext).not.to.equal(encryptSecret('same', oldKey).ciphertext);
  });

  it('decrypts with an older key after rotation, and fails without it', () => {
    const enc = encryptSecret('whsec_abc', oldKey);
    expect(decryptSecret(enc, [...newKey, ...oldKey])).to.equal('whsec_abc');
    expect(() => decryptSecret(enc, newKey)).to.throw(/no secrets key/);
  });

  it('detects tampering', () => {
    const enc = encryptSecret('sk_x', oldKey);
    const raw = Buffer.from(enc.ciphertext, 'base64');
    raw[raw.length - 1] ^= 1;
    expect(() => decryptSecret({ ...enc, ciphertext: raw.toString('base64') }, oldKey)).to.throw();
    expect(() => decryptSecret({ keyId: 'new', ciphertext: enc.ciphertext }, [...newKey])).to.throw();
  });

  it('hashes API keys deterministically', () => {
    expect(hashApiKey('svc_test_a'))
      .to.equal(hashApiKey('svc_test_a'))
      .and.to.match(/^[0-9a-f]{64}$/);
    expect(hashApiKey('svc_test_a')).not.to.equal(hashApiKey('svc_test_b'));
  });

  it('compares in constant time without throwing on a length mismatch', () => {
    expect(safeEqual('abc', 'abc')).to.equal(true);
    expect(safeEqual('abc', 'abd')).to.equal(false);
    expect(safeEqual('abc', 'abcd')).to.equal(false);
    expect(safeEqual('', 'x')).to.equal(false);
  });
});

describe('identifiers', () => {
  it('are a prefix and a UUID v4', () => {
    for (const kind of ['payment', 'refund', 'payout', 'merchant', 'credential', 'webhook', 'delivery'] as const) {
      const id = newId(kind);
      expect(isId(kind, id)).to.equal(true);
      expect(UUID_V4_RE.test(id.slice(id.indexOf('_') + 1))).to.equal(true);
    }
    expect(newId('payment')).to.match(/^pay_/);
    expect(newId('refund')).to.match(/^re_/);
    expect(newId('payout')).to.match(/^po_/);
  });

  it('refuses ids of another kind or shape', () => {
    const pay = newId('payment');
    expect(isId('refund', pay)).to.equal(false);
    expect(isId('payment', pay.toUpperCase())).to.equal(false);
    expect(isId('payment', 'pay_00000000-0000-1000-8000-000000000000')).to.equal(false);
    expect(isId('payment', 'pay_')).to.equal(false);
  });

  it('builds event ids from the object uuid, the time and a random part', () => {
    const pay = newId('payment');
    const a = newEventId(pay, 1700000000);
    expect(a).to.match(new RegExp(`^evt_${pay.slice(4)}_1700000000_[0-9a-f]{8}$`));
    expect(newEventId(pay, 1700000000)).not.to.equal(a);
  });
});
