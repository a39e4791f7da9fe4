import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

/** GET /v1/phone-numbers/{number} through the merchant pipeline (decisions.md "Integrator's kit"). */
describe('number lookup (GET /v1/phone-numbers/{number})', function () {
  this.timeout(30_000);
  let env: TestEnv;
  let shop: MerchantFixture;

  before(async () => {
    env = await startTestEnv();
    shop = await env.merchant({ scope: 'read' });
  });
  after(() => env?.close());

  const lookup = (typed: string, client = shop.client) => client.get(`/v1/phone-numbers/${encodeURIComponent(typed)}`);

  it('normalises what people type and names the operator, with a read key', async () => {
    const table: [string, string, string][] = [
      ['+243 81 234 5678', '243812345678', 'vodacom'],
      ['0812345678', '243812345678', 'vodacom'],
      ['243812345678', '243812345678', 'vodacom'],
      ['00243 97-123-4567', '243971234567', 'airtel'],
      ['(084) 123.45.67', '243841234567', 'orange'],
      ['0901234567', '243901234567', 'africell'],
    ];
    for (const [typed, msisdn, operator] of table) {
      const res = await lookup(typed);
      expect(res.status, typed).to.equal(200);
      expect(res.body).to.deep.equal({ object: 'phone_number', input: typed, msisdn, operator });
      expect(res.headers.get('x-ratelimit-limit')).to.equal('100');
    }
  });

  it('answers 400 validation-failed with param number for letters, a wrong length or an unknown prefix', async () => {
    for (const [typed, reason] of [
      ['08123abc78', /only digits/],
      ['081234567', /9 digits/],
      ['+2438123456789', /9 digits/],
      ['0701234567', /prefix 70/],
      ['+33612345678', /must start with/],
    ] as const) {
      const res = await lookup(typed);
      expect(res.status, typed).to.equal(400);
      expect(res.body.error).to.include({ code: 'validation-failed', param: 'number' });
      expect(res.body.error.message).to.match(reason);
      expect(res.body.error.request_id).to.be.a('string');
    }
    const query = await shop.client.get('/v1/phone-numbers/0812345678?operator=vodacom');
    expect(query.status).to.equal(400);
    expect(query.body.error).to.include({ code: 'validation-failed', param: 'operator' });
  });

  it('runs through the merchant pipeline: no key 401, unknown key 401', async () => {
    const none = await fetch(`${env.baseUrl}/v1/phone-numbers/0812345678`);
    expect(none.status).to.equal(401);
    expect(((await none.json()) as any).error.code).to.equal('auth-required');
    const bad = await fetch(`${env.baseUrl}/v1/phone-numbers/0812345678`, { headers: { Authorization: 'Bearer svc_test_nope' } });
    expect(bad.status).to.equal(401);
    expect(((await bad.json()) as any).error.code).to.equal('api-key-invalid');
  });
});
