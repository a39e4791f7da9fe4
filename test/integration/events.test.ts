import { expect } from 'chai';
import { startTestEnv, type TestEnv, type MerchantFixture } from '../helpers/env';
import { emitEvent } from '../helpers/webhooks';

describe('GET /v1/events (merchant recovery)', () => {
  let env: TestEnv;
  let m: MerchantFixture;
  before(async () => {
    env = await startTestEnv();
    m = await env.merchant({ scope: 'read' });
  });
  after(async () => env.close());

  it('lists the merchant’s events of the key’s environment newest first, each with object_version, paging without skips or repeats', async () => {
    const mine: string[] = [];
    for (let i = 0; i < 23; i++) {
      const type = i % 3 === 0 ? 'refund.succeeded' : 'payment.succeeded';
      mine.push((await emitEvent(env.services, m.merchant.id, { type, objectVersion: i + 1 })).id);
    }
    const other = await env.merchant();
    await emitEvent(env.services, other.merchant.id);
    await emitEvent(env.services, m.merchant.id, { environment: 'live' });

    const seen: any[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await m.client.get(`/v1/events?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).to.equal(200);
      expect(res.body.object).to.equal('list');
      seen.push(...res.body.data);
      cursor = res.body.next_cursor;
      expect(res.body.has_more).to.equal(cursor !== null);
    } while (cursor);
    expect(seen.map((e) => e.id).sort()).to.deep.equal([...mine].sort());
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1], seen[i]];
      expect(a.created > b.created || (a.created === b.created && a.id > b.id), 'newest first, ties by id').to.equal(
        true,
      );
    }
    for (const e of seen) {
      expect(Object.keys(e)).to.deep.equal(['id', 'type', 'created', 'data']);
      expect(e.data.object_version).to.be.a('number');
      expect(e.data.object.object).to.equal('payment');
    }
  });

  it('filters by type', async () => {
    const res = await m.client.get('/v1/events?type=refund.succeeded&limit=100');
    expect(res.status).to.equal(200);
    expect(res.body.data).to.have.length(8);
    expect(res.body.data.every((e: { type: string }) => e.type === 'refund.succeeded')).to.equal(true);
  });

  it('returns one event, the same envelope a webhook carries; 404 for another merchant’s, another environment’s or a malformed id', async () => {
    const event = await emitEvent(env.services, m.merchant.id, { objectVersion: 4 });
    const res = await m.client.get(`/v1/events/${event.id}`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      id: event.id,
      type: event.type,
      created: event.created,
      data: { object: event.body.data.object, object_version: 4 },
    });

    const other = await env.merchant();
    const theirs = await emitEvent(env.services, other.merchant.id);
    const live = await emitEvent(env.services, m.merchant.id, { environment: 'live' });
    for (const id of [theirs.id, live.id, 'evt_nope', `${event.id}x`]) {
      const r = await m.client.get(`/v1/events/${id}`);
      expect(r.status, id).to.equal(404);
      expect(r.body.error.code).to.equal('not-found');
    }
  });

  it('refuses a bad limit, type or cursor with 400 validation-failed naming it', async () => {
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['type=payment.refunded', 'type'],
      ['cursor=tomorrow', 'cursor'],
      ['cursor=1700000000.pay_123', 'cursor'],
    ];
    for (const [q, param] of cases) {
      const res = await m.client.get(`/v1/events?${q}`);
      expect(res.status, q).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param });
    }
  });

  it('accepts a bare Unix timestamp as cursor: events created before that second', async () => {
    const all = (await m.client.get('/v1/events?limit=100')).body.data;
    const newest = all[0].created;
    const res = await m.client.get(`/v1/events?limit=100&cursor=${newest}`);
    expect(res.status).to.equal(200);
    expect(res.body.data.map((e: { id: string }) => e.id)).to.deep.equal(
      all.filter((e: { created: number }) => e.created < newest).map((e: { id: string }) => e.id),
    );
  });

  it('requires a valid API key', async () => {
    const res = await fetch(`${env.baseUrl}/v1/events`);
    expect(res.status).to.equal(401);
  });
});
