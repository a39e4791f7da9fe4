import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { signatureHeader, verifyWebhook, webhookSignature } from '../../shared/client/webhooks';

const SECRET = 'whsec_unit_test_secret';
const BODY =
  '{"id":"evt_1","type":"payment.succeeded","created":1700000000,"data":{"object":{"amount":5000},"object_version":2}}';
const T = 1_700_000_000;

describe('webhook signatures and the verification helper', () => {
  it('signs `<t>.<raw body>` with HMAC-SHA256, lowercase hex, in the header form t=..,v1=..', () => {
    const expected = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
    expect(webhookSignature(SECRET, T, BODY)).to.equal(expected);
    expect(signatureHeader(SECRET, T, BODY)).to.equal(`t=${T},v1=${expected}`);
    expect(webhookSignature(SECRET, T, Buffer.from(BODY))).to.equal(expected);
  });

  it('accepts a genuine delivery within the tolerance, either side of now', () => {
    const header = signatureHeader(SECRET, T, BODY);
    expect(verifyWebhook(BODY, header, SECRET, { now: T })).to.deep.equal({ ok: true, timestamp: T });
    expect(verifyWebhook(Buffer.from(BODY), header, SECRET, { now: T + 300 }).ok).to.equal(true);
    expect(verifyWebhook(BODY, header, SECRET, { now: T - 300 }).ok).to.equal(true);
    expect(verifyWebhook(BODY, [header], SECRET, { now: T }).ok).to.equal(true);
  });

  it('rejects a timestamp outside the tolerance (default 300 s, or the one given)', () => {
    const header = signatureHeader(SECRET, T, BODY);
    expect(verifyWebhook(BODY, header, SECRET, { now: T + 301 })).to.deep.equal({
      ok: false,
      reason: 'timestamp-outside-tolerance',
    });
    expect(verifyWebhook(BODY, header, SECRET, { now: T - 301 }).ok).to.equal(false);
    expect(verifyWebhook(BODY, header, SECRET, { now: T + 60, toleranceSeconds: 30 }).ok).to.equal(false);
  });

  it('rejects a changed body, another secret, a changed timestamp, or a re-encoded body', () => {
    const header = signatureHeader(SECRET, T, BODY);
    const mismatch = { ok: false, reason: 'signature-mismatch' };
    expect(verifyWebhook(BODY.replace('5000', '5001'), header, SECRET, { now: T })).to.deep.equal(mismatch);
    expect(verifyWebhook(BODY, header, 'whsec_other', { now: T })).to.deep.equal(mismatch);
    expect(verifyWebhook(BODY, header.replace(`t=${T}`, `t=${T + 1}`), SECRET, { now: T })).to.deep.equal(mismatch);
    expect(verifyWebhook(JSON.stringify(JSON.parse(BODY), null, 2), header, SECRET, { now: T })).to.deep.equal(
      mismatch,
    );
  });

  it('accepts when any v1 matches (secret rotation), and rejects truncated or uppercase signatures', () => {
    const good = webhookSignature(SECRET, T, BODY);
    const bad = webhookSignature('whsec_old', T, BODY);
    expect(verifyWebhook(BODY, `t=${T},v1=${bad},v1=${good}`, SECRET, { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, `t=${T},v1=${good.slice(0, 63)}`, SECRET, { now: T }).ok).to.equal(false);
    expect(verifyWebhook(BODY, `t=${T},v1=${good.toUpperCase()}`, SECRET, { now: T }).ok).to.equal(false);
  });

  it('rejects a missing or malformed header', () => {
    const malformed = { ok: false, reason: 'malformed-header' };
    for (const header of [
      undefined,
      null,
      '',
      'garbage',
      `v1=${'0'.repeat(64)}`,
      `t=${T}`,
      `t=soon,v1=${'0'.repeat(64)}`,
      'x'.repeat(2000),
    ]) {
      expect(verifyWebhook(BODY, header, SECRET, { now: T }), String(header)).to.deep.equal(malformed);
    }
  });
});
