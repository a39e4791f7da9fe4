import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

const payment = (extra: Record<string, unknown>) => ({
  amount: 1000,
  currency: 'USD',
  method: 'mobile_money',
  operator: 'vodacom',
  phone: '243990000001',
  reference: `nul-${Math.random()}`,
  ...extra,
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
    // anything inside metadata names `metadata`: the merchant's key is never echoed, least of all a refused one
    ['a metadata value', { metadata: { order: 'a\u0000b' } }, 'metadata'],
    ['a metadata key', { metadata: { 'or\u0000der': 'x' } }, 'metadata'],
    ['the reference', { reference: 'ref\u0000' }, 'reference'],
    ['the description', { description: '\u0000' }, 'description'],
  ];
  for (const [where, extra, param] of cases) {
    it(`refuses it in ${where} with 400 validation-failed, and creates nothing`, async () => {
      const res = await m.client.post('/v1/payments', payment(extra));
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('validation-failed');
      expect(res.body.error.param).to.equal(param);
      expect(res.body.error.message).not.to.include('\u0000');
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

  const count = async (table: string) => Number((await env.services.db(table).count('* as count'))[0].count);

  describe('lone surrogates (an unpaired \\ud800-\\udfff escape, which Postgres would store as U+FFFD)', () => {
    const lone: [string, Record<string, unknown>, string][] = [
      ['the description (high surrogate)', { description: 'caf\ud800' }, 'description'],
      ['the reference (low surrogate)', { reference: '\udc00ref' }, 'reference'],
      ['a metadata value', { metadata: { order: 'x\udbff' } }, 'metadata'],
      ['a metadata key', { metadata: { ['k\ud800']: 'x' } }, 'metadata'],
    ];
    for (const [where, extra, param] of lone) {
      it(`refuses one in ${where} with 400 validation-failed, and creates nothing`, async () => {
        const body = payment(extra);
        expect(JSON.stringify(body)).to.match(/\\u(d8|db|dc)/); // sent as a JSON escape, as a client would
        const before = await count('payments');
        const res = await m.client.post('/v1/payments', body);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
        expect(await count('payments')).to.equal(before);
      });
    }

    it('refuses one in a payout and in operator requests, naming the field', async () => {
      const before = await Promise.all(['merchants', 'webhooks', 'payouts'].map(count));
      const payout = await m.client.post('/v1/payouts', {
        amount: 100,
        currency: 'USD',
        operator: 'vodacom',
        phone: '243990000001',
        reference: 'po-\ud800',
      });
      expect(payout.status).to.equal(400);
      expect(payout.body.error).to.include({ code: 'validation-failed', param: 'reference' });
      const merchant = await env.admin('POST', '/admin/merchants', { name: 'Shop \udfff' });
      expect(merchant.status).to.equal(400);
      expect(merchant.body.error).to.include({ code: 'validation-failed', param: 'name' });
      const hook = await env.admin('POST', '/admin/webhooks', {
        merchant_id: m.merchant.id,
        url: 'http://127.0.0.1:9/\ud800',
        events: ['*'],
        environment: 'test',
      });
      expect(hook.status).to.equal(400);
      expect(hook.body.error).to.include({ code: 'validation-failed', param: 'url' });
      expect(await Promise.all(['merchants', 'webhooks', 'payouts'].map(count))).to.deep.equal(before);
    });

    it('keeps a well-formed pair (an emoji) as sent', async () => {
      const res = await m.client.post('/v1/payments', payment({ description: 'merci 😀 \ud83d\ude00' }));
      expect(res.status).to.equal(201);
      const row = await env.services.db('payments').where({ id: res.body.id }).first('description');
      expect(row.description).to.equal('merci 😀 😀');
    });
  });

  it('still accepts the same payment without it', async () => {
    const res = await m.client.post('/v1/payments', payment({ metadata: { order: 'ab' }, description: 'fine' }));
    expect(res.status).to.equal(201);
  });
});
