import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { requestHash, releasesKey } from '../../api/pipeline/idempotency';
import { ipAllowed, normaliseIp, scopeAllows } from '../../api/pipeline/access';
import { canonicalPath, idempotencyOf, signatureTakenWithKey, V1_PATH } from '../../api/pipeline/request';
import { bodyLimitFor, signatureValid, timestampFresh } from '../../api/pipeline/signed';
import { PAYMENT_BODY_LIMIT, V1_BODY_LIMIT } from '../../api/body';
import { signRequest } from '../../shared/client/signing';
import { safeEqual } from '../../shared/crypto/secrets';
import { loadConfig } from '../../shared/config';
import type { Scope } from '../../shared/db/models';

describe('pipeline pure rules', () => {
  describe('scopes, every scope × method × route', () => {
    const methods = ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'];
    const paths = [
      '/v1/payments',
      '/v1/payments/',
      '/V1/PAYMENTS',
      '/v1/payments/pay_1',
      '/v1/payments/pay_1/refund',
      '/v1/payments/pay_1/refunds',
      '/v1/payouts',
      '/v1/balance',
      '/v1/unknown',
    ];
    /** The spec's table, written out independently of the implementation. */
    function expected(scope: Scope, method: string, path: string): boolean {
      const read = method === 'GET' || method === 'HEAD';
      const createPayment = method === 'POST' && ['/v1/payments', '/v1/payments/', '/V1/PAYMENTS'].includes(path);
      if (scope === 'read') return read;
      if (scope === 'payments') return read || createPayment;
      return true;
    }
    for (const scope of ['read', 'payments', 'full'] as Scope[]) {
      for (const method of methods) {
        for (const path of paths) {
          const allow = expected(scope, method, path);
          it(`${scope} ${method} ${path} → ${allow ? 'allowed' : 'refused'}`, () => {
            expect(scopeAllows(scope, method, path)).to.equal(allow);
          });
        }
      }
    }
  });

  describe('signature compare', () => {
    const secret = 'sk_test_secret';
    const body = Buffer.from('{"amount":100}');
    const good = createHmac('sha256', secret).update(`1700000000.POST./v1/payments.`).update(body).digest('hex');

    it('accepts the request signature, built independently', () => {
      expect(signatureValid(secret, '1700000000', 'POST', '/v1/payments', body, good)).to.equal(true);
      expect(signRequest(secret, '1700000000', 'post', '/v1/payments', body)).to.equal(good);
    });

    it('refuses, without throwing, any other value: other length, case, prefix, empty, non-hex, multi-byte', () => {
      for (const presented of [
        '',
        'a',
        good.slice(1),
        good + '0',
        good.toUpperCase(),
        `sha256=${good}`,
        'é'.repeat(32),
        '\u0000'.repeat(64),
        good.replace(/.$/, (c) => (c === '0' ? '1' : '0')),
      ]) {
        expect(() => signatureValid(secret, '1700000000', 'POST', '/v1/payments', body, presented)).not.to.throw();
        expect(signatureValid(secret, '1700000000', 'POST', '/v1/payments', body, presented), presented).to.equal(
          false,
        );
      }
    });

    it('covers every part: timestamp, method, path, body bytes', () => {
      expect(signatureValid(secret, '1700000001', 'POST', '/v1/payments', body, good)).to.equal(false);
      expect(signatureValid(secret, '1700000000', 'PATCH', '/v1/payments', body, good)).to.equal(false);
      expect(signatureValid(secret, '1700000000', 'POST', '/v1/payouts', body, good)).to.equal(false);
      expect(
        signatureValid(secret, '1700000000', 'POST', '/v1/payments', Buffer.from('{"amount": 100}'), good),
      ).to.equal(false);
      expect(signatureValid('sk_other', '1700000000', 'POST', '/v1/payments', body, good)).to.equal(false);
    });

    it('safeEqual never throws on a length mismatch', () => {
      expect(safeEqual('abc', 'abcd')).to.equal(false);
      expect(safeEqual('', '')).to.equal(true);
      expect(safeEqual('abc', 'abc')).to.equal(true);
    });
  });

  describe('timestamp', () => {
    const now = 1_800_000_000;
    const cases: [string, boolean][] = [
      [String(now), true],
      [String(now - 299), true],
      [String(now + 299), true],
      [String(now - 300), false],
      [String(now + 300), false],
      ['', false],
      [' 1800000000', false],
      ['1800000000.0', false],
      ['1.8e9', false],
      ['-1800000000', false],
      ['0x6B49D200', false],
      [String(now * 1000), false],
    ];
    for (const [raw, fresh] of cases) {
      it(`"${raw}" → ${fresh ? 'fresh' : 'expired'}`, () => expect(timestampFresh(raw, now)).to.equal(fresh));
    }
  });

  describe('paths', () => {
    it('canonicalises as the router matches: case and trailing slashes', () => {
      expect(canonicalPath('/V1/Payments/')).to.equal('/v1/payments');
      expect(canonicalPath('/v1/payments//')).to.equal('/v1/payments');
      expect(canonicalPath('/')).to.equal('/');
      expect(canonicalPath('/v1/pa%79ments')).to.equal('/v1/pa%79ments');
    });

    it('guards every /v1 path, whatever its case, and nothing else', () => {
      for (const p of ['/v1', '/v1/', '/V1/payments', '/v1/x/y']) expect(V1_PATH.test(p), p).to.equal(true);
      for (const p of ['/v10', '/v1x', '/admin/v1', '/health/live', '/checkout/v1'])
        expect(V1_PATH.test(p), p).to.equal(false);
    });

    it('needs an idempotency key on POST /v1/payments and /v1/payouts, takes one on a refund, and nowhere else', () => {
      expect(idempotencyOf('POST', '/v1/payments')).to.equal('required');
      expect(idempotencyOf('POST', '/V1/Payments/')).to.equal('required');
      expect(idempotencyOf('POST', '/V1/Payouts/')).to.equal('required');
      expect(idempotencyOf('POST', '/v1/payments/pay_1/refund')).to.equal('optional');
      expect(idempotencyOf('POST', '/V1/Payments/pay_1/Refund/')).to.equal('optional');
      expect(idempotencyOf('GET', '/v1/payments')).to.equal(undefined);
      expect(idempotencyOf('POST', '/v1/payments/pay_1/refunds')).to.equal(undefined);
      expect(idempotencyOf('POST', '/v1/payments/pay_1/refund/x')).to.equal(undefined);
      expect(idempotencyOf('PATCH', '/v1/payouts')).to.equal(undefined);
    });

    it("takes a payment's signature with its key, in the writer's statement; every other signed POST's before its route", () => {
      expect(signatureTakenWithKey('POST', '/v1/payments')).to.equal(true);
      expect(signatureTakenWithKey('POST', '/V1/Payments/')).to.equal(true);
      for (const [m, p] of [
        ['POST', '/v1/payouts'],
        ['POST', '/v1/payments/pay_1/refund'],
        ['POST', '/v1/events/evt_1/redeliver'],
        ['GET', '/v1/payments'],
      ]) {
        expect(signatureTakenWithKey(m, p), `${m} ${p}`).to.equal(false);
      }
    });

    it('caps POST /v1/payments at 100 KB and other bodies at 1 MB', () => {
      expect(bodyLimitFor('POST', '/v1/payments'))
        .to.equal(PAYMENT_BODY_LIMIT)
        .and.equal(100 * 1024);
      expect(bodyLimitFor('POST', '/V1/PAYMENTS/')).to.equal(PAYMENT_BODY_LIMIT);
      expect(bodyLimitFor('POST', '/v1/payouts'))
        .to.equal(V1_BODY_LIMIT)
        .and.equal(1024 * 1024);
      expect(bodyLimitFor('PATCH', '/v1/payments')).to.equal(V1_BODY_LIMIT);
    });
  });

  describe('idempotency rules', () => {
    it('hashes method, route and exact body bytes', () => {
      const body = Buffer.from('{"a":1}');
      const h = requestHash('POST', '/v1/payments', body);
      expect(h).to.match(/^[0-9a-f]{64}$/);
      expect(requestHash('POST', '/V1/payments/', body), 'same route').to.equal(h);
      expect(requestHash('POST', '/v1/payouts', body)).not.to.equal(h);
      expect(requestHash('PUT', '/v1/payments', body)).not.to.equal(h);
      expect(requestHash('POST', '/v1/payments', Buffer.from('{"a": 1}'))).not.to.equal(h);
    });

    it('frees the key on 400 and 5xx, stores every other outcome', () => {
      for (const s of [400, 500, 502, 503]) expect(releasesKey(s), String(s)).to.equal(true);
      for (const s of [200, 201, 202, 204, 403, 404, 409, 413, 422]) expect(releasesKey(s), String(s)).to.equal(false);
    });
  });

  describe('IP allowlist', () => {
    it('allows anyone without a list', () => {
      expect(ipAllowed(null, '203.0.113.1')).to.equal(true);
      expect(ipAllowed([], '203.0.113.1')).to.equal(true);
    });

    it('compares addresses, not text: IPv4-mapped IPv6 and IPv6 spellings', () => {
      expect(normaliseIp('::ffff:10.0.0.1')).to.equal('10.0.0.1');
      expect(ipAllowed(['10.0.0.1'], '::ffff:10.0.0.1')).to.equal(true);
      expect(ipAllowed(['::ffff:10.0.0.1'], '10.0.0.1')).to.equal(true);
      expect(ipAllowed(['2001:db8::1'], '2001:0db8:0:0:0:0:0:1')).to.equal(true);
      expect(ipAllowed(['10.0.0.1'], '10.0.0.2')).to.equal(false);
      expect(ipAllowed(['10.0.0.1'], '')).to.equal(false);
      expect(ipAllowed(['10.0.0.1'], 'not-an-ip')).to.equal(false);
    });
  });

  describe('rate limit configuration', () => {
    it('is 100 per minute by default and cannot be changed in production', () => {
      expect(loadConfig({}).rateLimitPerMinute).to.equal(100);
      expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '5000' }).rateLimitPerMinute).to.equal(5000);
      const prod = {
        NODE_ENV: 'production',
        SECRETS_KEY: `k:${Buffer.alloc(32, 7).toString('base64')}`,
        ADMIN_API_TOKEN: 'a-real-admin-token-0123456789abcd',
        SANDBOX_CALLBACK_SECRET: 'a-real-sandbox-callback-secret',
        CARD_CALLBACK_SECRET: 'a-real-card-callback-secret',
        CARD_VAULT_API_KEY: 'a-real-card-vault-key',
      };
      expect(loadConfig(prod).rateLimitPerMinute).to.equal(100);
      expect(() => loadConfig({ ...prod, RATE_LIMIT_PER_MINUTE: '101' })).to.throw(/RATE_LIMIT_PER_MINUTE/);
    });
  });
});
