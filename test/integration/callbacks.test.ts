import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { signCallback } from '../../shared/providers/signature';
import { callbackBody, SANDBOX_SECRET, sendCallback } from '../helpers/money';

/**
 * POST /callbacks/{provider} on its own (no worker runs here): what is stored, and what is
 * refused with nothing stored.
 */
describe('provider callback endpoint', () => {
  let env: TestEnv;
  const stored = async () =>
    Number((await env.services.db('provider_callbacks').count<{ c: number }[]>('* as c'))[0].c);
  const jobs = async () =>
    Number(
      (await env.services.db('outbox').where({ queue: 'callback-reconciler' }).count<{ c: number }[]>('* as c'))[0].c,
    );

  before(async () => {
    env = await startTestEnv();
  });
  after(async () => env.close());

  it('stores a verified callback raw, with one callback-reconciler job carrying ids and the kind only, and answers 200 at once', async () => {
    const id = `pay_${randomUUID()}`;
    // odd spacing and key order: the inbox keeps the bytes as sent
    const raw = `{"status":"succeeded",  "kind":"payment","external_id":"${id}","event_id":"e-1","provider_ref":"R-1","extra":{"x":1}}`;
    const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ received: true });
    const [row] = await env.services.db('provider_callbacks').where({ object_id: id });
    expect(row).to.include({
      provider: 'vodacom-sandbox',
      raw_body: raw,
      verified: true,
      provider_event_id: 'e-1',
      object_kind: 'payment',
      reported_status: 'succeeded',
      provider_ref: 'R-1',
      processed_at: null,
      outcome: null,
    });
    const [job] = await env.services.db('outbox').whereRaw(`payload->>'callbackId' = ?`, [row.id]);
    expect(job).to.include({ queue: 'callback-reconciler', job_name: 'apply-callback' });
    expect(Object.keys(job.payload).sort()).to.deep.equal(['callbackId', 'kind', 'requestId']);
    expect(job.payload.kind).to.equal('payment');
  });

  describe('refused with nothing stored', () => {
    let before: [number, number];
    beforeEach(async () => {
      before = [await stored(), await jobs()];
    });
    afterEach(async () => {
      expect([await stored(), await jobs()]).to.deep.equal(before);
    });

    const raw = () => callbackBody({ external_id: `pay_${randomUUID()}`, status: 'succeeded' });
    const now = () => Math.floor(Date.now() / 1000);

    it('forged: signed with another secret (401 signature-invalid)', async () => {
      const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw(), { secret: 'guessed-secret' });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('signature-invalid');
    });

    it('unsigned, or with a malformed signature header', async () => {
      for (const signature of [null, '', 'v1=abc', `t=${now()}`, `t=${now()},v1=${'0'.repeat(64)}`]) {
        const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw(), { signature });
        expect(res.status, String(signature)).to.equal(401);
      }
    });

    it('replayed: a genuine callback signed more than 5 minutes ago, or ahead of time', async () => {
      const body = raw();
      // 5 s past the bound, read just before each request: the server's clock ticks on between this
      // reading and its check, and 300 s ahead is still inside (the exact bounds are the unit test's:
      // test/unit/payment-provider.test.ts)
      for (const offset of [-305, 305]) {
        const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', body, { timestamp: now() + offset });
        expect(res.status).to.equal(401);
      }
    });

    it('tampered: a signature over other bytes', async () => {
      const body = raw();
      const signature = signCallback(SANDBOX_SECRET, body, now());
      const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', body.replace('succeeded', 'failed'), {
        signature,
      });
      expect(res.status).to.equal(401);
    });

    it('signed with the sandbox secret, sent as a live operator: no such provider (404; live callbacks come from connectors)', async () => {
      expect((await sendCallback(env.baseUrl, 'vodacom', raw())).status).to.equal(404);
    });

    it('malformed: not JSON (400 invalid-json) or not the protocol’s shape (400 validation-failed)', async () => {
      const notJson = await sendCallback(env.baseUrl, 'vodacom-sandbox', '{"status": ');
      expect(notJson.status).to.equal(400);
      expect(notJson.body.error.code).to.equal('invalid-json');
      for (const body of [
        '[]',
        '{}',
        JSON.stringify({ event_id: 'e', kind: 'loan', external_id: 'pay_x', status: 'succeeded' }),
        JSON.stringify({ event_id: 'e', kind: 'payment', external_id: 'pay_x', status: 'paid' }),
      ]) {
        const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', body);
        expect(res.status, body).to.equal(400);
        expect(res.body.error.code).to.equal('validation-failed');
      }
    });

    it('not UTF-8 JSON, or holding NUL or a lone surrogate, even when signed (400 invalid-json)', async () => {
      const text = (id: string, ref: string) =>
        `{"event_id":"e-${id}","kind":"payment","external_id":"pay_${id}","provider_ref":"${ref}","status":"succeeded","failure_code":null,"failure_message":null}`;
      const bodies: [string, string | Buffer][] = [
        ['an escaped NUL in a field', text(randomUUID(), 'R\\u0000')],
        ['an escaped NUL in an extra field', text(randomUUID(), 'R').replace('}', ',"extra":"x\\u0000"}')],
        ['an escaped NUL in a key', text(randomUUID(), 'R').replace('}', ',"ex\\u0000tra":1}')],
        ['a raw NUL byte inside a string', Buffer.from(text(randomUUID(), 'R\u0000'), 'utf8')],
        ['a raw NUL byte between tokens', Buffer.concat([Buffer.from(text(randomUUID(), 'R')), Buffer.from([0])])],
        [
          'invalid UTF-8 inside a string',
          Buffer.concat([
            Buffer.from(text(randomUUID(), 'R').slice(0, -1) + ',"extra":"'),
            Buffer.from([0xff, 0xc0, 0xaf]),
            Buffer.from('"}'),
          ]),
        ],
        [
          'a truncated UTF-8 sequence',
          Buffer.concat([
            Buffer.from(text(randomUUID(), 'R').slice(0, -1) + ',"extra":"'),
            Buffer.from([0xe2, 0x82]),
            Buffer.from('"}'),
          ]),
        ],
        ['a lone surrogate escape', text(randomUUID(), 'R\\ud800')],
        [
          'a UTF-8 byte order mark',
          Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text(randomUUID(), 'R'))]),
        ],
      ];
      for (const [what, body] of bodies) {
        const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', body);
        expect(res.status, what).to.equal(400);
        expect(res.body.error.code, what).to.equal('invalid-json');
      }
      // a genuine non-ASCII body is fine
      const ok = await sendCallback(env.baseUrl, 'vodacom-sandbox', text(randomUUID(), 'Réf-€-😀'));
      expect(ok.status).to.equal(200);
      before[0] += 1;
      before[1] += 1;
    });

    it('to an unknown provider (404 not-found)', async () => {
      const res = await sendCallback(env.baseUrl, 'mpesa', raw());
      expect(res.status).to.equal(404);
      expect(res.body.error.code).to.equal('not-found');
    });

    it('above the 64 KB callback cap (413 payload-too-large)', async () => {
      const big = callbackBody({
        external_id: `pay_${randomUUID()}`,
        status: 'succeeded',
        failure_message: 'x'.repeat(70 * 1024),
      });
      const res = await sendCallback(env.baseUrl, 'vodacom-sandbox', big);
      expect(res.status).to.equal(413);
      expect(res.body.error.code).to.equal('payload-too-large');
    });
  });

  it('is outside the merchant pipeline: no API key, no rate limit, open during maintenance', async () => {
    const results = await Promise.all(
      Array.from({ length: 110 }, () =>
        sendCallback(
          env.baseUrl,
          'vodacom-sandbox',
          callbackBody({ external_id: `pay_${randomUUID()}`, status: 'succeeded' }),
        ),
      ),
    );
    expect(results.every((r) => r.status === 200)).to.equal(true);
    await env.admin('PUT', '/admin/maintenance', { enabled: true });
    try {
      const res = await sendCallback(
        env.baseUrl,
        'vodacom-sandbox',
        callbackBody({ external_id: `pay_${randomUUID()}`, status: 'succeeded' }),
      );
      expect(res.status).to.equal(200);
    } finally {
      await env.admin('PUT', '/admin/maintenance', { enabled: false });
    }
  });
});
