import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { verifyWebhook } from '../../shared/client/webhooks';
import { emitEvent, startReceiver, type Receiver, type Received } from '../helpers/webhooks';

/**
 * Standard Webhooks headers on real deliveries, verified with the `standardwebhooks` library a
 * merchant would use, and webhook secret rotation (docs/decisions.md#integrators-kit).
 */
describe('Standard Webhooks and secret rotation (real sender, receiver on loopback)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let rx: Receiver;

  before(async () => {
    env = await startTestEnv({
      WEBHOOK_RETRY_DELAYS_MS: '100,100,100,100,100,100,100,100',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    rx = await startReceiver();
    await env.spawn('workers/webhook-sender/index.ts', {
      WEBHOOK_SWEEP_INTERVAL_MS: '200',
      WEBHOOK_SWEEP_GRACE_MS: '2000',
    });
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  async function endpoint(merchantId: string, path: string) {
    const res = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      url: rx.url + path,
      events: ['payment.*'],
      environment: 'test',
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  }

  /** What a merchant's receiver does with the standard library: throws unless a signature matches. */
  const standardVerify = (secret: string, got: Received) =>
    new Webhook(secret).verify(got.raw.toString('utf8'), got.headers as Record<string, string>) as {
      id: string;
      type: string;
    };

  it('sends webhook-id (the delivery id), webhook-timestamp and webhook-signature that the standardwebhooks library accepts', async () => {
    const { merchant, credential } = await env.merchant({ scope: 'read' });
    expect(credential.webhook_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(credential.webhook_secret.slice(6), 'base64')).to.have.length(32);
    await endpoint(merchant.id, '/standard');
    const event = await emitEvent(env.services, merchant.id);
    const [got] = await rx.waitFor('/standard', 1);

    const h = got.headers;
    expect(h['webhook-id']).to.equal(h['x-service-delivery-id']);
    expect(h['webhook-timestamp']).to.equal(h['x-service-timestamp']);
    expect(h['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]{43}=$/);
    const payload = standardVerify(credential.webhook_secret, got);
    expect(payload).to.include({ id: event.id, type: 'payment.succeeded' });
    // the spec's own signature is still there, unchanged
    expect(verifyWebhook(got.raw, h['x-service-signature'], credential.webhook_secret).ok).to.equal(true);

    // another merchant's secret, a changed body, a changed id: the library refuses each
    const other = await env.merchant({ scope: 'read' });
    expect(() => standardVerify(other.credential.webhook_secret, got)).to.throw(/No matching signature/);
    expect(() =>
      standardVerify(credential.webhook_secret, {
        ...got,
        raw: Buffer.from(got.raw.toString().replace('5000', '5001')),
      }),
    ).to.throw(/No matching signature/);
    expect(() =>
      standardVerify(credential.webhook_secret, { ...got, headers: { ...h, 'webhook-id': 'whd_other' } }),
    ).to.throw(/No matching signature/);
  });

  it('rotation: during the overlap each delivery carries both signatures in both headers, and each secret verifies; after it, only the new one', async () => {
    const { merchant, credential } = await env.merchant({ scope: 'read' });
    const oldSecret: string = credential.webhook_secret;
    await endpoint(merchant.id, '/rotating');

    const rotated = await env.admin('POST', `/admin/merchants/${merchant.id}/webhook-secret/rotate`, {
      environment: 'test',
    });
    expect(rotated.status, JSON.stringify(rotated.body)).to.equal(200);
    const newSecret: string = rotated.body.webhook_secret;
    expect(newSecret)
      .to.match(/^whsec_[A-Za-z0-9+/]{43}=$/)
      .and.not.equal(oldSecret);
    expect(rotated.body).to.include({ object: 'webhook_secret', merchant_id: merchant.id, environment: 'test' });
    expect(rotated.body.previous_expires_at - rotated.body.rotated).to.equal(86_400);

    await emitEvent(env.services, merchant.id);
    const [got] = await rx.waitFor('/rotating', 1);
    const h = got.headers;
    expect(String(h['x-service-signature']).match(/v1=/g)).to.have.length(2);
    expect(String(h['webhook-signature']).split(' ')).to.have.length(2);
    for (const secret of [newSecret, oldSecret]) {
      expect(verifyWebhook(got.raw, h['x-service-signature'], secret).ok, 'X-Service-Signature').to.equal(true);
      expect(() => standardVerify(secret, got), 'webhook-signature').not.to.throw();
    }

    // a rotation with no overlap: the old secret stops signing at once
    const again = await env.admin('POST', `/admin/merchants/${merchant.id}/webhook-secret/rotate`, {
      environment: 'test',
      overlap_seconds: 0,
    });
    expect(again.status).to.equal(200);
    expect(again.body.previous_expires_at).to.equal(null);
    await emitEvent(env.services, merchant.id);
    const [, latest] = await rx.waitFor('/rotating', 2);
    expect(String(latest.headers['x-service-signature']).match(/v1=/g)).to.have.length(1);
    expect(String(latest.headers['webhook-signature']).split(' ')).to.have.length(1);
    expect(() => standardVerify(again.body.webhook_secret, latest)).not.to.throw();
    expect(() => standardVerify(newSecret, latest)).to.throw(/No matching signature/);
    expect(verifyWebhook(latest.raw, latest.headers['x-service-signature'], newSecret).ok).to.equal(false);
  });

  it('refuses a bad rotation request and changes nothing', async () => {
    const { merchant } = await env.merchant({ scope: 'read' });
    const before = await env.services.db('webhook_secrets').where({ merchant_id: merchant.id }).first();
    const cases: [unknown, string][] = [
      [{}, 'environment'],
      [{ environment: 'prod' }, 'environment'],
      [{ environment: 'test', overlap_seconds: -1 }, 'overlap_seconds'],
      [{ environment: 'test', overlap_seconds: 1.5 }, 'overlap_seconds'],
      [{ environment: 'test', overlap_seconds: 2_592_001 }, 'overlap_seconds'],
      [{ environment: 'test', extra: 1 }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const res = await env.admin('POST', `/admin/merchants/${merchant.id}/webhook-secret/rotate`, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param });
    }
    expect(await env.services.db('webhook_secrets').where({ merchant_id: merchant.id }).first()).to.deep.equal(before);
    const unknown = await env.admin(
      'POST',
      '/admin/merchants/mer_00000000-0000-4000-8000-000000000000/webhook-secret/rotate',
      { environment: 'test' },
    );
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error.code).to.equal('not-found');
    const noToken = await fetch(`${env.baseUrl}/admin/merchants/${merchant.id}/webhook-secret/rotate`, {
      method: 'POST',
      body: '{"environment":"test"}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(noToken.status).to.equal(401);
  });
});
