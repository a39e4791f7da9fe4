import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger } from '../../shared/logger';
import { send } from '../helpers/http';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

/** GET /v1/phone-numbers/{number} through the merchant pipeline (docs/decisions.md#integrators-kit). */
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

  it('never writes the number in clear in the access log, whatever its spelling: the route template and a masked path', async () => {
    const lines: string[] = [];
    const memory = new Writable({ write: (chunk, _enc, cb) => (lines.push(chunk.toString()), cb()) });
    const services = env.services as { log: typeof env.services.log };
    const quiet = services.log;
    services.log = createLogger('info', 'web-test', memory);
    try {
      const spellings = [
        '0812345678',
        '%2B243%2081%20234%205678',
        '243-81-234-5678',
        '(0)81.234.56.78',
        '%2B243812345678',
        '00243812345678',
        '243812345678',
      ];
      for (const spelling of spellings) {
        // sent as typed, percent-encoding and all (fetch would re-encode brackets)
        const res = await shop.client.get(`/v1/phone-numbers/${spelling}`);
        expect(res.status, spelling).to.equal(200);
        expect(res.body.msisdn).to.equal('243812345678');
      }
      // refused before any route (no key): still masked
      expect((await send(env.baseUrl, 'GET', '/v1/phone-numbers/0812345678')).status).to.equal(401);
      const access = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
      expect(access).to.have.length(spellings.length + 1);
      for (const line of access) expect(line.path).to.equal('/v1/phone-numbers/*****5678');
      expect(access[0].route).to.equal('/v1/phone-numbers/:number');
      const all = lines.join('\n');
      for (const clear of ['812345678', '81 234', '81-234', '81.234', '81%20234', '%2081'])
        expect(all).not.to.include(clear);
    } finally {
      services.log = quiet;
    }
  });

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
    const bad = await fetch(`${env.baseUrl}/v1/phone-numbers/0812345678`, {
      headers: { Authorization: 'Bearer svc_test_nope' },
    });
    expect(bad.status).to.equal(401);
    expect(((await bad.json()) as any).error.code).to.equal('api-key-invalid');
  });
});
