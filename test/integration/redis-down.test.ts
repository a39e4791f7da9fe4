import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { freePort } from '../../scripts/lib/ports';

/**
 * docs/decisions.md#backends-down: with Redis unreachable, writes get 503 service-unavailable
 * with Retry-After: 5 and change nothing, while GET requests keep working, rate-limited in the
 * process meanwhile. The app here points at a Redis URL on a port nothing listens on (the shared
 * Redis is never stopped).
 */
describe('Redis unreachable from the web', () => {
  let env: TestEnv;
  let m: MerchantFixture;
  before(async () => {
    env = await startTestEnv({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    m = await env.merchant({ scope: 'full' });
  });
  after(async () => env.close());

  const count = async (table: string) => Number((await env.services.db(table).count('* as count'))[0].count);

  it('keeps answering GET requests, with the rate-limit headers', async () => {
    for (const path of ['/v1/payments', '/v1/balance', '/v1/events', '/v1/payouts', '/v1/settlements']) {
      const res = await m.client.get(path);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
      expect(res.headers.get('x-ratelimit-limit')).to.equal('100');
      expect(Number(res.headers.get('x-ratelimit-remaining'))).to.be.within(0, 99);
    }
    expect((await m.client.get('/v1/payments/pay_00000000-0000-4000-8000-000000000000')).status).to.equal(404);
  });

  it('refuses writes with 503 service-unavailable and Retry-After: 5, writing nothing', async () => {
    const before = await Promise.all(['payments', 'payouts', 'idempotency_keys', 'outbox'].map(count));
    const payment = await m.client.post('/v1/payments', {
      amount: 1000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243990000001',
      reference: 'redis-down',
    });
    expect(payment.status).to.equal(503);
    expect(payment.headers.get('retry-after')).to.equal('5');
    expect(payment.body.error.code).to.equal('service-unavailable');
    const payout = await m.client.post('/v1/payouts', {
      amount: 1000,
      currency: 'USD',
      operator: 'vodacom',
      phone: '243990000001',
      reference: 'redis-down',
    });
    expect(payout.status).to.equal(503);
    expect(payout.headers.get('retry-after')).to.equal('5');
    expect(await Promise.all(['payments', 'payouts', 'idempotency_keys', 'outbox'].map(count))).to.deep.equal(before);
  });

  it('limits GET requests in process meanwhile: 100 a minute per key, then 429 with Retry-After', async () => {
    const other = await env.merchant({ scope: 'read' });
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) statuses.push((await other.client.get('/v1/balance')).status);
    expect(statuses.every((s) => s === 200)).to.equal(true);
    const over = await other.client.get('/v1/balance');
    expect(over.status).to.equal(429);
    expect(over.body.error.code).to.equal('rate-limit-exceeded');
    expect(Number(over.headers.get('retry-after'))).to.be.within(1, 60);
    expect(over.headers.get('x-ratelimit-remaining')).to.equal('0');
    // another key has its own count
    expect((await m.client.get('/v1/balance')).status).to.equal(200);
  });
});
