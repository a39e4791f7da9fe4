import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { signatureHeader, standardSignatureHeader, verifyWebhook } from '../../shared/client/webhooks';

/**
 * The SDK's verifier given a request's headers: the spec's X-Service-Signature, or the Standard
 * Webhooks headers (checked against the `standardwebhooks` library's own signing), one or two
 * signatures (a secret rotation), one or several secrets on the receiver's side.
 */
const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const BODY =
  '{"id":"evt_1","type":"payment.succeeded","created":1700000000,"data":{"object":{"amount":5000},"object_version":2}}';
const T = 1_700_000_000;
const ID = 'whd_0b0e8d1c-4a3b-4c2d-9e8f-0123456789ab';

function standardHeaders(secrets: string[], t = T) {
  return {
    'webhook-id': ID,
    'webhook-timestamp': String(t),
    'webhook-signature': standardSignatureHeader(secrets, ID, t, BODY),
  };
}

describe('webhook verification from the request headers (SDK verifier)', () => {
  it('takes X-Service-Signature from Node-style or fetch-style headers, whatever their case', () => {
    const s = secret();
    const header = signatureHeader(s, T, BODY);
    expect(verifyWebhook(BODY, { 'x-service-signature': header }, s, { now: T })).to.deep.equal({
      ok: true,
      timestamp: T,
    });
    expect(verifyWebhook(BODY, new Headers({ 'X-Service-Signature': header }), s, { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, { 'X-Service-Signature': header }, secret(), { now: T })).to.deep.equal({
      ok: false,
      reason: 'signature-mismatch',
    });
  });

  it('verifies the Standard Webhooks headers when X-Service-Signature is absent, as the standardwebhooks library signs them', () => {
    const s = secret();
    const librarySigned = new Webhook(s).sign(ID, new Date(T * 1000), BODY);
    expect(standardSignatureHeader(s, ID, T, BODY)).to.equal(librarySigned);
    const headers = { 'webhook-id': ID, 'webhook-timestamp': String(T), 'webhook-signature': librarySigned };
    expect(verifyWebhook(BODY, headers, s, { now: T })).to.deep.equal({ ok: true, timestamp: T });
    expect(verifyWebhook(BODY.replace('5000', '5001'), headers, s, { now: T })).to.deep.equal({
      ok: false,
      reason: 'signature-mismatch',
    });
    expect(verifyWebhook(BODY, { ...headers, 'webhook-id': `${ID}x` }, s, { now: T }).ok).to.equal(false);
    expect(verifyWebhook(BODY, headers, s, { now: T + 301 })).to.deep.equal({
      ok: false,
      reason: 'timestamp-outside-tolerance',
    });
    expect(verifyWebhook(BODY, { 'webhook-id': ID, 'webhook-timestamp': String(T) }, s, { now: T })).to.deep.equal({
      ok: false,
      reason: 'malformed-header',
    });
    expect(verifyWebhook(BODY, {}, s, { now: T })).to.deep.equal({ ok: false, reason: 'malformed-header' });
  });

  it('accepts either secret while a delivery carries two signatures (rotation), in both header schemes', () => {
    const [older, newer] = [secret(), secret()];
    const both = { 'x-service-signature': signatureHeader([newer, older], T, BODY) };
    expect(verifyWebhook(BODY, both, older, { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, both, newer, { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, both, secret(), { now: T }).ok).to.equal(false);
    const standard = standardHeaders([newer, older]);
    expect(standard['webhook-signature'].split(' ')).to.have.length(2);
    expect(verifyWebhook(BODY, standard, older, { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, standard, newer, { now: T }).ok).to.equal(true);
  });

  it("accepts a list of the receiver's secrets (its own switch-over), any of which may match", () => {
    const [older, newer] = [secret(), secret()];
    const signedOld = { 'x-service-signature': signatureHeader(older, T, BODY) };
    expect(verifyWebhook(BODY, signedOld, [newer, older], { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, standardHeaders([older]), [newer, older], { now: T }).ok).to.equal(true);
    expect(verifyWebhook(BODY, signedOld, [newer], { now: T }).ok).to.equal(false);
    expect(() => verifyWebhook(BODY, signedOld, [], { now: T })).to.throw(/needs a webhook secret/);
  });
});
