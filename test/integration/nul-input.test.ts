import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

const payment = (extra: Record<string, unknown>) => ({
  amount: 1000, currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: '243990000001', reference: `nul-${Math.random()}`, ...extra,
});

// Postgres cannot store U+0000 in text or jsonb: a payment holding one could never be credited
describe('the NUL character in input', () => {
  let env: TestEnv;
  let m: MerchantFixture;
  before(async () => {
    env = await startTestEnv();
    m = await env.merchant({ scope: 'full' });
  });
  after(async () => env.close());

  const cases: [string, Record<string, unknown>, string][] = [
    ['a metadata value', { metadata: { order: 'a\u0000b' } }, 'metadata.order'],
    ['a metadata key', { metadata: { 'or\u0000der': 'x' } }, 'metadata.or\u0000der'],
    ['the reference', { reference: 'ref\u0000' }, 'reference'],
    ['the description', { description: '\u0000' }, 'description'],
  ];
  for (const [where, extra, param] of cases) {
    it(`refuses it in ${where} with 400 validation-failed, and creates nothing`, async () => {
      const res = await m.client.post('/v1/payments', payment(extra));
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('validation-failed');
      expect(res.body.error.param).to.equal(param);
      expect(Number((await env.services.db('payments').count('* as count'))[0].count)).to.equal(0);
    });
  }

  it('refuses it in a query value with 400 validation-failed', async () => {
    const res = await m.client.get('/v1/payments?reference=%00');
    expect(res.status).to.equal(400);
    expect(res.body.error).to.include({ code: 'validation-failed', param: 'reference' });
  });

  it('refuses it in an operator request too', async () => {
    const res = await env.admin('POST', '/admin/merchants', { name: 'Shop\u0000' });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.include({ code: 'validation-failed', param: 'name' });
  });

  it('still accepts the same payment without it', async () => {
    const res = await m.client.post('/v1/payments', payment({ metadata: { order: 'ab' }, description: 'fine' }));
    expect(res.status).to.equal(201);
  });
});
