import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { verifyWebhook } from '../../shared/client/webhooks';
import { newId } from '../../shared/ids';
import { emitEvent, startReceiver, type Behaviour, type Receiver } from '../helpers/webhooks';

/** Shortened schedule: distinct delays so the order of the retries shows. */
const DELAYS = [100, 200, 300, 400, 500, 600, 700, 800];

describe('webhook deliveries (real sender, receivers on loopback)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let rx: Receiver;

  before(async () => {
    env = await startTestEnv({ WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','), WEBHOOK_TIMEOUT_MS: '1000' });
    rx = await startReceiver();
    await env.spawn('workers/webhook-sender/index.ts');
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  async function endpoint(merchantId: string, path: string, events = ['payment.*'], environment = 'test') {
    const res = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      url: rx.url + path,
      events,
      environment,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  }

  const delivery = (id: string) => env.services.db('webhook_deliveries').where({ id }).first();
  const attemptRows = (deliveryId: string) =>
    env.services.db('webhook_attempts').where({ delivery_id: deliveryId }).orderBy(['round', 'attempt']);

  it('signs the exact body with the merchant webhook secret and sends the X-Service-* headers', async () => {
    const { merchant, credential } = await endpointOwner();
    const hook = await endpoint(merchant.id, '/signed');
    const event = await emitEvent(env.services, merchant.id, { objectVersion: 7 });
    const [got] = await rx.waitFor('/signed', 1);

    const h = got.headers;
    expect(h['content-type']).to.equal('application/json');
    expect(h['user-agent']).to.equal('Service-Webhook/1.0');
    expect(h['x-service-event']).to.equal('payment.succeeded');
    expect(h['x-service-delivery-id']).to.match(
      /^whd_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(h['x-service-delivery-attempt']).to.equal('1');
    expect(h['x-service-timestamp']).to.match(/^\d{10}$/);
    expect(h['x-service-signature']).to.equal(
      `t=${String(h['x-service-timestamp'])},v1=${/v1=([0-9a-f]{64})$/.exec(String(h['x-service-signature']))?.[1]}`,
    );
    expect(
      Object.keys(h)
        .filter((k) => k.startsWith('x-service-'))
        .sort(),
    ).to.deep.equal([
      'x-service-delivery-attempt',
      'x-service-delivery-id',
      'x-service-event',
      'x-service-signature',
      'x-service-timestamp',
    ]);

    const now = Math.floor(Date.now() / 1000);
    expect(verifyWebhook(got.raw, h['x-service-signature'], credential.webhook_secret)).to.deep.equal({
      ok: true,
      timestamp: Number(h['x-service-timestamp']),
    });
    expect(verifyWebhook(got.raw, h['x-service-signature'], 'whsec_someone_else').ok).to.equal(false);
    const tampered = Buffer.from(got.raw.toString().replace('5000', '5001'));
    expect(verifyWebhook(tampered, h['x-service-signature'], credential.webhook_secret)).to.deep.equal({
      ok: false,
      reason: 'signature-mismatch',
    });
    expect(
      verifyWebhook(got.raw, h['x-service-signature'], credential.webhook_secret, { now: now + 3600 }).ok,
    ).to.equal(false);

    const body = JSON.parse(got.raw.toString());
    expect(Object.keys(body)).to.deep.equal(['id', 'type', 'created', 'data']);
    expect(body).to.deep.equal({
      id: event.id,
      type: 'payment.succeeded',
      created: event.created,
      data: { object: event.body.data.object, object_version: 7 },
    });

    const row = await eventually(async () => {
      const d = await delivery(String(h['x-service-delivery-id']));
      return d.status !== 'pending' && d;
    });
    expect(row).to.include({
      event_id: event.id,
      webhook_id: hook.id,
      status: 'succeeded',
      attempts: 1,
      last_status_code: 200,
    });
    const [attempt] = await attemptRows(row.id);
    expect(attempt).to.include({ round: 1, attempt: 1, status_code: 200, error: null });
    expect(attempt.latency_ms).to.be.a('number');
    expect(attempt.response_excerpt).to.equal('answer 200 to attempt 1; call 243*****5678');
  });

  async function endpointOwner() {
    return env.merchant({ scope: 'read' });
  }

  it('follows the shortened schedule with attempts 1..8 and one delivery id, then marks the delivery dead; replay sends it again from attempt 1', async () => {
    const { merchant } = await endpointOwner();
    const hook = await endpoint(merchant.id, '/failing');
    let healthy = false;
    rx.on('/failing', () => ({ status: healthy ? 204 : 500 }));
    await emitEvent(env.services, merchant.id);
    const got = await rx.waitFor('/failing', 8);
    const id = String(got[0].headers['x-service-delivery-id']);
    expect(got.map((r) => r.headers['x-service-delivery-attempt'])).to.deep.equal([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
    ]);
    expect(new Set(got.map((r) => r.headers['x-service-delivery-id']))).to.deep.equal(new Set([id]));

    const dead = await eventually(async () => {
      const d = await delivery(id);
      return d.status === 'dead' && d;
    });
    expect(dead).to.include({ attempts: 8, last_status_code: 500 });
    const attempts = await attemptRows(id);
    expect(attempts.map((a) => a.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    // each retry waited at least its delay of the schedule, in order
    for (let n = 1; n < 8; n++) {
      expect(
        attempts[n].started_at.getTime() - attempts[n - 1].started_at.getTime(),
        `gap before attempt ${n + 1}`,
      ).to.be.at.least(DELAYS[n - 1]);
    }
    expect(rx.at('/failing')).to.have.length(8);

    const list = await env.admin('GET', `/admin/webhooks/${hook.id}/deliveries`);
    expect(list.status).to.equal(200);
    expect(list.body.data).to.have.length(1);
    expect(list.body.data[0]).to.include({
      id,
      status: 'dead',
      attempt_count: 8,
      replays: 0,
      last_status_code: 500,
      next_attempt_at: null,
    });
    expect(list.body.data[0].attempts).to.have.length(8);
    expect(list.body.data[0].attempts[7]).to.include({
      round: 1,
      attempt: 8,
      status_code: 500,
      error: null,
      in_flight: false,
    });

    healthy = true;
    const replay = await env.admin('POST', `/admin/deliveries/${id}/replay`);
    expect(replay.status).to.equal(202);
    const again = await rx.waitFor('/failing', 9);
    expect(again[8].headers['x-service-delivery-id']).to.equal(id);
    expect(again[8].headers['x-service-delivery-attempt']).to.equal('1');
    await eventually(async () => (await delivery(id)).status === 'succeeded');
    const after = await env.admin('GET', `/admin/webhooks/${hook.id}/deliveries`);
    expect(after.body.data[0]).to.include({ status: 'succeeded', attempt_count: 1, replays: 1, last_status_code: 204 });
    expect(after.body.data[0].attempts.map((a: any) => [a.round, a.attempt])).to.deep.equal([
      [1, 1],
      [1, 2],
      [1, 3],
      [1, 4],
      [1, 5],
      [1, 6],
      [1, 7],
      [1, 8],
      [2, 1],
    ]);

    const twice = await env.admin('POST', `/admin/deliveries/${id}/replay`);
    expect(twice.status).to.equal(409);
    expect(twice.body.error.code).to.equal('delivery-not-dead');
    for (const unknown of [newId('delivery'), 'whd_nope']) {
      const res = await env.admin('POST', `/admin/deliveries/${unknown}/replay`);
      expect(res.status).to.equal(404);
      expect(res.body.error.code).to.equal('not-found');
    }
  });

  it('retries a receiver that redirects, refuses, fails, hangs, cuts the connection or answers too late, then succeeds', async () => {
    const { merchant } = await endpointOwner();
    const cases: [string, Behaviour, { status_code: number | null; error: string | null }][] = [
      [
        '/redirect',
        { status: 302, location: `${rx.url}/redirect-target` },
        { status_code: 302, error: 'redirect-not-followed' },
      ],
      ['/not-found', { status: 404 }, { status_code: 404, error: null }],
      ['/unavailable', { status: 503 }, { status_code: 503, error: null }],
      ['/hang', { hang: true }, { status_code: null, error: 'timeout' }],
      ['/close', { close: true }, { status_code: null, error: 'connection-reset' }],
      ['/late', { status: 200, delayMs: 1500 }, { status_code: null, error: 'timeout' }],
    ];
    for (const [path, first] of cases) {
      rx.on(path, (_req, n) => (n === 1 ? first : { status: 200 }));
      await endpoint(merchant.id, path);
    }
    await emitEvent(env.services, merchant.id);
    for (const [path, , firstAttempt] of cases) {
      const got = await rx.waitFor(path, 2);
      expect(
        got.map((r) => r.headers['x-service-delivery-attempt']),
        path,
      ).to.deep.equal(['1', '2']);
      const id = String(got[0].headers['x-service-delivery-id']);
      expect(got[1].headers['x-service-delivery-id']).to.equal(id);
      const d = await eventually(async () => {
        const row = await delivery(id);
        return row.status === 'succeeded' && row;
      });
      expect(d.attempts, path).to.equal(2);
      const [a1, a2] = await attemptRows(id);
      expect(a1, path).to.include(firstAttempt);
      expect(a2, path).to.include({ status_code: 200, error: null });
    }
    expect(rx.at('/redirect-target'), 'redirects are not followed').to.have.length(0);
  });

  it('sends nothing to a disabled endpoint, and resumes once it is enabled again', async () => {
    const { merchant } = await endpointOwner();
    const off = await endpoint(merchant.id, '/disabled');
    const on = await endpoint(merchant.id, '/enabled');
    const patched = await env.admin('PATCH', `/admin/webhooks/${off.id}`, { status: 'disabled' });
    expect(patched.status).to.equal(200);
    expect(patched.body.status).to.equal('disabled');
    const event = await emitEvent(env.services, merchant.id);
    await rx.waitFor('/enabled', 1);
    const rows = await env.services.db('webhook_deliveries').where({ event_id: event.id });
    expect(rows.map((r) => r.webhook_id)).to.deep.equal([on.id]);
    expect(rx.at('/disabled')).to.have.length(0);
    const test = await env.admin('POST', `/admin/webhooks/${off.id}/test`);
    expect(test.status).to.equal(409);
    expect(test.body.error.code).to.equal('webhook-disabled');

    await env.admin('PATCH', `/admin/webhooks/${off.id}`, { status: 'enabled' });
    await emitEvent(env.services, merchant.id);
    await rx.waitFor('/disabled', 1);
  });

  it("never delivers a test key's events to a live endpoint, and refuses internal addresses for live deliveries", async () => {
    const { merchant } = await endpointOwner();
    const testHook = await endpoint(merchant.id, '/test-env');
    // a live endpoint on loopback cannot be registered (see the admin tests); written directly, it
    // shows the check made again before every live attempt, for a literal address and a name
    const port = new URL(rx.url).port;
    const live = [
      { id: newId('webhook'), url: `https://127.0.0.1:${port}/live-literal` },
      { id: newId('webhook'), url: `https://localhost:${port}/live-name` },
    ];
    await env.services
      .db('webhooks')
      .insert(live.map((w) => ({ ...w, merchant_id: merchant.id, environment: 'live', events: ['*'] })));

    const testEvent = await emitEvent(env.services, merchant.id, { environment: 'test' });
    await rx.waitFor('/test-env', 1);
    const testRows = await env.services.db('webhook_deliveries').where({ event_id: testEvent.id });
    expect(testRows.map((r) => r.webhook_id)).to.deep.equal([testHook.id]);

    const liveEvent = await emitEvent(env.services, merchant.id, { environment: 'live' });
    const liveRows = await env.services.db('webhook_deliveries').where({ event_id: liveEvent.id });
    expect(liveRows.map((r) => r.webhook_id).sort()).to.deep.equal(live.map((w) => w.id).sort());
    for (const row of liveRows) {
      await eventually(async () => (await delivery(row.id)).status === 'dead');
      const attempts = await attemptRows(row.id);
      expect(attempts).to.have.length(8);
      for (const a of attempts) {
        expect(a.status_code).to.equal(null);
        expect(a.error).to.match(/^destination-not-allowed: .*loopback/);
      }
    }
    expect(rx.at('/live-literal')).to.have.length(0);
    expect(rx.at('/live-name')).to.have.length(0);
    expect(rx.at('/test-env')).to.have.length(1);
  });

  it('delivers a webhook.test event to the one endpoint the operator names', async () => {
    const { merchant, credential } = await endpointOwner();
    const target = await endpoint(merchant.id, '/probe-target', ['refund.*']);
    await endpoint(merchant.id, '/bystander', ['*']);
    const res = await env.admin('POST', `/admin/webhooks/${target.id}/test`);
    expect(res.status).to.equal(202);
    expect(res.body).to.include({ webhook_id: target.id });
    const [got] = await rx.waitFor('/probe-target', 1);
    expect(got.headers['x-service-event']).to.equal('webhook.test');
    expect(got.headers['x-service-delivery-id']).to.equal(res.body.delivery_id);
    expect(verifyWebhook(got.raw, got.headers['x-service-signature'], credential.webhook_secret).ok).to.equal(true);
    const body = JSON.parse(got.raw.toString());
    expect(body.id).to.equal(res.body.event_id);
    expect(body.type).to.equal('webhook.test');
    expect(body.data.object).to.deep.equal({
      object: 'webhook_test',
      webhook_id: target.id,
      message: 'Test event sent by the operator',
    });
    expect(body.data.object_version).to.be.a('number');
    expect(rx.at('/bystander')).to.have.length(0);
    for (const id of [newId('webhook'), 'wh_nope']) {
      expect((await env.admin('POST', `/admin/webhooks/${id}/test`)).status).to.equal(404);
    }
  });
});
