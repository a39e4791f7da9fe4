import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { emitEvent, startReceiver, type Receiver } from '../helpers/webhooks';

/**
 * POST /v1/events/{id}/redeliver and GET /v1/events/{id}/deliveries (docs/decisions.md#integrators-kit),
 * with the real webhook sender and receivers on loopback.
 */
describe('event redelivery and delivery list (merchant API)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let rx: Receiver;
  let shop: MerchantFixture;
  let reader: MerchantFixture['client'];

  before(async () => {
    // a failed attempt waits 3 s for the next: long enough to see it `failed`
    env = await startTestEnv({
      WEBHOOK_RETRY_DELAYS_MS: '3000,3000,3000,3000,3000,3000,3000,3000',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    rx = await startReceiver();
    await env.spawn('workers/webhook-sender/index.ts', {
      WEBHOOK_SWEEP_INTERVAL_MS: '200',
      WEBHOOK_SWEEP_GRACE_MS: '5000',
    });
    shop = await env.merchant({ scope: 'full' });
    const read = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
      environment: 'test',
      scope: 'read',
    });
    reader = new (shop.client.constructor as any)({
      baseUrl: env.baseUrl,
      apiKey: read.body.api_key,
      secret: read.body.secret,
    });
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

  /** A signed POST with its own X-Timestamp, so repeated redeliveries are not refused as replays. */
  // counted down from the second this file starts: \`now - n\` would repeat a timestamp whenever the clock ticks between two calls
  let tsBase = 0;
  before(() => {
    tsBase = Math.floor(Date.now() / 1000);
  });
  let tsOffset = 0;
  const redeliver = (id: string, client = shop.client, body?: unknown) =>
    client.post(`/v1/events/${id}/redeliver`, body, { timestamp: tsBase - tsOffset++ });

  it('sends the event again to every subscribed endpoint (new delivery ids, attempt 1) and lists every delivery newest first', async () => {
    const a = await endpoint(shop.merchant.id, '/a');
    const b = await endpoint(shop.merchant.id, '/b', ['payment.succeeded']);
    await endpoint(shop.merchant.id, '/refunds-only', ['refund.*']);
    const off = await endpoint(shop.merchant.id, '/disabled');
    expect((await env.admin('PATCH', `/admin/webhooks/${off.id}`, { status: 'disabled' })).status).to.equal(200);

    const event = await emitEvent(env.services, shop.merchant.id);
    const [firstA] = await rx.waitFor('/a', 1);
    const [firstB] = await rx.waitFor('/b', 1);
    const original = await eventually(async () => {
      const res = await reader.get(`/v1/events/${event.id}/deliveries`);
      return res.body.data.length === 2 && res.body.data.every((d: any) => d.status === 'succeeded') && res.body;
    });
    expect(original.object).to.equal('list');
    for (const d of original.data) {
      expect(d).to.have.keys([
        'id',
        'object',
        'event_id',
        'webhook_id',
        'status',
        'attempts',
        'last_response_status',
        'created',
      ]);
      expect(d).to.include({
        object: 'webhook_delivery',
        event_id: event.id,
        status: 'succeeded',
        attempts: 1,
        last_response_status: 200,
      });
    }
    expect(original.data.map((d: any) => d.webhook_id).sort()).to.deep.equal([a.id, b.id].sort());

    const res = await redeliver(event.id);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    expect(res.body.object).to.equal('list');
    expect(res.body.data).to.have.length(2);
    expect(res.body.data.map((d: any) => d.webhook_id).sort()).to.deep.equal([a.id, b.id].sort());
    for (const d of res.body.data) {
      expect(d.id).to.match(/^whd_/);
      expect([firstA.headers['x-service-delivery-id'], firstB.headers['x-service-delivery-id']]).not.to.include(d.id);
      expect(d).to.include({
        object: 'webhook_delivery',
        event_id: event.id,
        status: 'pending',
        attempts: 0,
        last_response_status: null,
      });
    }
    const [, againA] = await rx.waitFor('/a', 2);
    const [, againB] = await rx.waitFor('/b', 2);
    for (const got of [againA, againB]) {
      expect(got.headers['x-service-delivery-attempt']).to.equal('1');
      expect(res.body.data.map((d: any) => d.id)).to.include(got.headers['x-service-delivery-id']);
      expect(got.headers['webhook-id']).to.equal(got.headers['x-service-delivery-id']);
      expect(JSON.parse(got.raw.toString()).id).to.equal(event.id);
    }
    expect(againA.raw.toString()).to.equal(firstA.raw.toString());
    expect(rx.at('/refunds-only')).to.have.length(0);
    expect(rx.at('/disabled')).to.have.length(0);

    const listed = await eventually(async () => {
      const r = await reader.get(`/v1/events/${event.id}/deliveries`);
      return r.body.data.length === 4 && r.body.data.every((d: any) => d.status === 'succeeded') && r.body;
    });
    expect(
      listed.data
        .slice(0, 2)
        .map((d: any) => d.id)
        .sort(),
    ).to.deep.equal(res.body.data.map((d: any) => d.id).sort());
    expect(
      listed.data
        .slice(2)
        .map((d: any) => d.id)
        .sort(),
    ).to.deep.equal(original.data.map((d: any) => d.id).sort());
  });

  it('shows a failing delivery as failed with its last response status, then succeeded', async () => {
    const { merchant, client } = await env.merchant({ scope: 'full' });
    await endpoint(merchant.id, '/flaky');
    rx.on('/flaky', (_req, n) => ({ status: n === 1 ? 503 : 200 }));
    const event = await emitEvent(env.services, merchant.id);
    await rx.waitFor('/flaky', 1);
    const failed = await eventually(async () => {
      const r = await client.get(`/v1/events/${event.id}/deliveries`);
      return r.body.data[0]?.attempts === 1 && r.body.data[0].last_response_status === 503 && r.body.data[0];
    });
    expect(failed.status).to.equal('failed');
    await rx.waitFor('/flaky', 2);
    const ok = await eventually(async () => {
      const r = await client.get(`/v1/events/${event.id}/deliveries`);
      return r.body.data[0]?.status === 'succeeded' && r.body.data[0];
    });
    expect(ok).to.include({ attempts: 2, last_response_status: 200 });
  });

  it('allows 10 redeliveries per event, then 429 redelivery-limit, sending nothing more', async () => {
    const { merchant, client } = await env.merchant({ scope: 'full' });
    await endpoint(merchant.id, '/capped');
    const event = await emitEvent(env.services, merchant.id);
    await rx.waitFor('/capped', 1);
    for (let i = 1; i <= 10; i++) {
      const r = await redeliver(event.id, client);
      expect(r.status, `redelivery ${i}: ${JSON.stringify(r.body)}`).to.equal(202);
    }
    const over = await redeliver(event.id, client);
    expect(over.status).to.equal(429);
    expect(over.body.error.code).to.equal('redelivery-limit');
    expect(over.body.error.message).to.match(/10 times/);
    await rx.waitFor('/capped', 11);
    expect(
      await env.services.db('webhook_deliveries').where({ event_id: event.id }).count('* as n').first(),
    ).to.deep.equal({ n: 11 });
    expect((await env.services.db('events').where({ id: event.id }).first()).redeliveries).to.equal(10);
  });

  it('an event with no subscribed endpoint: 202 with an empty list, not counted', async () => {
    const { merchant, client } = await env.merchant({ scope: 'full' });
    const event = await emitEvent(env.services, merchant.id);
    const r = await redeliver(event.id, client);
    expect(r.status).to.equal(202);
    expect(r.body).to.deep.equal({ object: 'list', data: [] });
    expect((await env.services.db('events').where({ id: event.id }).first()).redeliveries).to.equal(0);
  });

  it('refuses another merchant’s, another environment’s or an unknown event (404), a read key (403), an unsigned POST (401) and a body field (400), changing nothing', async () => {
    const other = await env.merchant({ scope: 'full' });
    await endpoint(other.merchant.id, '/other');
    const foreign = await emitEvent(env.services, other.merchant.id);
    const live = await emitEvent(env.services, shop.merchant.id, { environment: 'live' });
    const mine = await emitEvent(env.services, shop.merchant.id);
    const before = await env.services.db('webhook_deliveries').count('* as n').first();

    for (const id of [foreign.id, live.id, 'evt_nope', `${mine.id}x`]) {
      const r = await redeliver(id);
      expect(r.status, id).to.equal(404);
      expect(r.body.error.code).to.equal('not-found');
      const l = await reader.get(`/v1/events/${encodeURIComponent(id)}/deliveries`);
      expect(l.status, id).to.equal(404);
      expect(l.body.error.code).to.equal('not-found');
    }
    const scoped = await redeliver(mine.id, reader);
    expect(scoped.status).to.equal(403);
    expect(scoped.body.error.code).to.equal('insufficient-scope');
    const payments = await env.merchant({ scope: 'payments' });
    const pm = await emitEvent(env.services, payments.merchant.id);
    expect((await redeliver(pm.id, payments.client)).status).to.equal(403);
    const unsigned = await shop.client.post(`/v1/events/${mine.id}/redeliver`, undefined, {
      omitHeaders: ['X-Signature'],
    });
    expect(unsigned.status).to.equal(401);
    expect(unsigned.body.error.code).to.equal('signature-invalid');
    const field = await redeliver(mine.id, shop.client, { endpoints: ['wh_x'] });
    expect(field.status).to.equal(400);
    expect(field.body.error).to.include({ code: 'validation-failed', param: 'endpoints' });
    const query = await reader.get(`/v1/events/${mine.id}/deliveries?limit=5`);
    expect(query.status).to.equal(400);

    expect(await env.services.db('webhook_deliveries').count('* as n').first()).to.deep.equal(before);
    expect(
      (await env.services.db('events').whereIn('id', [foreign.id, live.id, mine.id]).max('redeliveries as m').first())!
        .m,
    ).to.equal(0);
  });
});
