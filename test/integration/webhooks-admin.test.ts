import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { newId } from '../../shared/ids';
import { emitEvent } from '../helpers/webhooks';

describe('operator API: webhook endpoints', () => {
  let env: TestEnv;
  let merchantId: string;
  before(async () => {
    env = await startTestEnv();
    merchantId = (await env.admin('POST', '/admin/merchants', { name: 'Hooks' })).body.id;
  });
  after(async () => env.close());

  const create = (body: Record<string, unknown>) =>
    env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      events: ['payment.*'],
      environment: 'test',
      url: 'http://127.0.0.1:9/h',
      ...body,
    });
  const count = async () =>
    Number((await env.services.db('webhooks').count<{ count: string }[]>('* as count'))[0].count);

  it('creates an endpoint with its url, patterns and environment (201), and lists it', async () => {
    const res = await create({
      url: 'https://93.184.216.34/hooks?source=svc',
      events: ['payment.*', 'refund.succeeded'],
      environment: 'live',
    });
    expect(res.status).to.equal(201);
    expect(res.body.id).to.match(/^wh_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body).to.include({
      object: 'webhook',
      merchant_id: merchantId,
      url: 'https://93.184.216.34/hooks?source=svc',
      environment: 'live',
      status: 'enabled',
    });
    expect(res.body.events).to.deep.equal(['payment.*', 'refund.succeeded']);
    expect(res.body.breaker).to.deep.equal({
      state: 'closed',
      consecutive_failures: 0,
      opened_at: null,
      open_until: null,
    });

    const test = await create({ url: 'http://localhost:8080/dev', environment: 'test' });
    expect(test.status, 'test endpoints may use http and loopback').to.equal(201);

    const list = await env.admin('GET', `/admin/webhooks?merchant_id=${merchantId}`);
    expect(list.status).to.equal(200);
    expect(list.body.object).to.equal('list');
    expect(list.body.data.map((w: { id: string }) => w.id)).to.include.members([res.body.id, test.body.id]);
    expect((await env.admin('GET', `/admin/webhooks/${res.body.id}`)).body).to.deep.equal(res.body);
  });

  it('stores the URL normalised, and refuses the same endpoint twice (409 webhook-exists), spelled either way', async () => {
    const { body: other } = await env.admin('POST', '/admin/merchants', { name: 'Other hooks' });
    const first = await create({ url: 'HTTP://LocalHost:80', events: ['refund.*'] });
    expect(first.status).to.equal(201);
    expect(first.body.url).to.equal('http://localhost/');
    const before = await count();
    for (const url of ['http://localhost', 'http://localhost:80/', 'Http://LOCALHOST/', 'http://localhost/']) {
      const again = await create({ url, events: ['payment.*'] });
      expect(again.status, url).to.equal(409);
      expect(again.body.error.code).to.equal('webhook-exists');
      expect(again.body.error.message).to.include(first.body.id);
    }
    expect(await count()).to.equal(before);
    // another path, port, query, environment or merchant is another endpoint
    for (const body of [
      { url: 'http://localhost/Other' },
      { url: 'http://localhost:8080/' },
      { url: 'http://localhost/?a=1' },
      { url: 'https://localhost/' },
      { url: 'http://localhost/', merchant_id: other.id },
    ]) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(201);
    }
    const live = await create({ url: 'HTTPS://93.184.216.34:443', environment: 'live' });
    expect(live.body.url).to.equal('https://93.184.216.34/');
    expect((await create({ url: 'https://93.184.216.34/', environment: 'live' })).status).to.equal(409);
    // a PATCH onto another endpoint's URL is refused the same way, and leaves the row as it was
    const moved = await create({ url: 'http://localhost/moving' });
    const clash = await env.admin('PATCH', `/admin/webhooks/${moved.body.id}`, { url: 'HTTP://localhost:80' });
    expect(clash.status).to.equal(409);
    expect(clash.body.error.code).to.equal('webhook-exists');
    expect((await env.admin('GET', `/admin/webhooks/${moved.body.id}`)).body.url).to.equal('http://localhost/moving');
    const same = await env.admin('PATCH', `/admin/webhooks/${moved.body.id}`, { url: 'HTTP://LOCALHOST/moving' });
    expect(same.status, 'its own URL in another spelling is not a duplicate').to.equal(200);
    expect(same.body.url).to.equal('http://localhost/moving');
    // a row stored before normalisation is compared normalised
    await env.services.db('webhooks').insert({
      id: newId('webhook'),
      merchant_id: merchantId,
      environment: 'test',
      url: 'HTTP://127.0.0.1:80',
      events: ['*'],
    });
    expect((await create({ url: 'http://127.0.0.1/' })).status).to.equal(409);
    // two registrations of one URL at once: one 201, one 409
    const race = await Promise.all([
      create({ url: 'http://localhost/race' }),
      create({ url: 'HTTP://localhost:80/race' }),
    ]);
    expect(race.map((r) => r.status).sort()).to.deep.equal([201, 409]);
  });

  const refusedLive: [string, string][] = [
    ['http in live', 'http://93.184.216.34/h'],
    ['loopback', 'https://127.0.0.1/h'],
    ['loopback in another notation', 'https://2130706433/h'],
    ['a name resolving to loopback', 'https://localhost/h'],
    ['private 10/8', 'https://10.1.2.3/h'],
    ['private 172.16/12', 'https://172.20.0.5/h'],
    ['private 192.168/16', 'https://192.168.1.10/h'],
    ['carrier-grade NAT', 'https://100.64.0.7/h'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data'],
    ['IPv6 loopback', 'https://[::1]/h'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/h'],
    ['IPv6 unique local', 'https://[fd00:ec2::254]/h'],
    ['IPv6 link-local', 'https://[fe80::1]/h'],
    ['unspecified', 'https://0.0.0.0/h'],
    ['credentials in the URL', 'https://user:pass@93.184.216.34/h'],
    ['not a URL', 'not a url'],
    ['another scheme', 'ftp://93.184.216.34/h'],
  ];
  for (const [what, url] of refusedLive) {
    it(`refuses a live endpoint URL: ${what} (400 validation-failed on url, nothing stored)`, async () => {
      const before = await count();
      const res = await create({ url, environment: 'live' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param: 'url' });
      expect(await count()).to.equal(before);
    });
  }

  const badBodies: [string, Record<string, unknown>, string][] = [
    ['no url', { url: undefined }, 'url'],
    ['no events', { events: undefined }, 'events'],
    ['empty events', { events: [] }, 'events'],
    ['a pattern matching no event', { events: ['payment.*', 'paymnt.*'] }, 'events.1'],
    ['a malformed pattern', { events: ['Payment.Succeeded'] }, 'events.0'],
    ['webhook.test as a subscription', { events: ['webhook.*'] }, 'events.0'],
    ['duplicate patterns', { events: ['refund.*', 'refund.*'] }, 'events'],
    ['a bad environment', { environment: 'prod' }, 'environment'],
    ['a malformed merchant id', { merchant_id: 'merchant-1' }, 'merchant_id'],
    ['an unknown field', { secret: 'x' }, 'secret'],
  ];
  for (const [what, patch, param] of badBodies) {
    it(`refuses ${what} with 400 validation-failed on ${param}`, async () => {
      const before = await count();
      const res = await create(patch);
      expect(res.status).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param });
      expect(await count()).to.equal(before);
    });
  }

  it('answers 404 for an unknown merchant or webhook, and 400 without merchant_id on the list', async () => {
    const res = await create({ merchant_id: newId('merchant') });
    expect(res.status).to.equal(404);
    expect(res.body.error.code).to.equal('not-found');
    for (const id of [newId('webhook'), 'wh_x']) {
      expect((await env.admin('GET', `/admin/webhooks/${id}`)).status).to.equal(404);
      expect((await env.admin('PATCH', `/admin/webhooks/${id}`, { status: 'disabled' })).status).to.equal(404);
      expect((await env.admin('GET', `/admin/webhooks/${id}/deliveries`)).status).to.equal(404);
    }
    const list = await env.admin('GET', '/admin/webhooks');
    expect(list.status).to.equal(400);
    expect(list.body.error.param).to.equal('merchant_id');
  });

  it('updates url, patterns and status; a live URL is checked again', async () => {
    const { body: live } = await create({ url: 'https://93.184.216.34/a', environment: 'live' });
    const res = await env.admin('PATCH', `/admin/webhooks/${live.id}`, {
      url: 'https://93.184.216.34/b',
      events: ['*'],
      status: 'disabled',
    });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ url: 'https://93.184.216.34/b', status: 'disabled' });
    expect(res.body.events).to.deep.equal(['*']);
    const inside = await env.admin('PATCH', `/admin/webhooks/${live.id}`, { url: 'https://192.168.0.1/b' });
    expect(inside.status).to.equal(400);
    expect(inside.body.error.param).to.equal('url');
    expect((await env.admin('GET', `/admin/webhooks/${live.id}`)).body.url).to.equal('https://93.184.216.34/b');
    for (const [body, param] of [
      [{}, 'body'],
      [{ status: 'paused' }, 'status'],
      [{ events: ['nothing'] }, 'events.0'],
    ] as const) {
      const bad = await env.admin('PATCH', `/admin/webhooks/${live.id}`, body);
      expect(bad.status).to.equal(400);
      expect(bad.body.error.param).to.equal(param);
    }
  });

  it('lists an endpoint’s deliveries newest first with cursor pagination, none skipped or repeated within one second', async () => {
    const { body: hook } = await create({ url: 'http://127.0.0.1:9/none', events: ['payment.*'] });
    for (let i = 0; i < 7; i++) await emitEvent(env.services, merchantId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await env.admin(
        'GET',
        `/admin/webhooks/${hook.id}/deliveries?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).to.equal(200);
      seen.push(...page.body.data.map((d: { id: string }) => d.id));
      cursor = page.body.next_cursor;
      expect(page.body.has_more).to.equal(cursor !== null);
    } while (cursor);
    expect(seen).to.have.length(7);
    expect(new Set(seen).size).to.equal(7);
    const rows = await env.services
      .db('webhook_deliveries')
      .where({ webhook_id: hook.id })
      .orderBy([
        { column: 'created', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
    expect(seen).to.deep.equal(rows.map((r) => r.id));
    const pending = await env.admin('GET', `/admin/webhooks/${hook.id}/deliveries?status=pending&limit=1`);
    expect(pending.body.data[0]).to.include({ status: 'pending', event_type: 'payment.succeeded', attempt_count: 0 });
    for (const q of ['limit=0', 'limit=101', 'cursor=yesterday', 'status=lost']) {
      const bad = await env.admin('GET', `/admin/webhooks/${hook.id}/deliveries?${q}`);
      expect(bad.status, q).to.equal(400);
      expect(bad.body.error.code).to.equal('validation-failed');
    }
  });

  it('refuses a replay of a delivery that is not dead (409)', async () => {
    const { body: hook } = await create({ url: 'http://127.0.0.1:9/pending' });
    await emitEvent(env.services, merchantId);
    const d = await env.services.db('webhook_deliveries').where({ webhook_id: hook.id }).first();
    const res = await env.admin('POST', `/admin/deliveries/${d.id}/replay`);
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('delivery-not-dead');
  });

  it('requires the operator token', async () => {
    const res = await fetch(`${env.baseUrl}/admin/webhooks?merchant_id=${merchantId}`);
    expect(res.status).to.equal(401);
  });
});
