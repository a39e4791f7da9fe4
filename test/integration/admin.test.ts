import { expect } from 'chai';
import { startTestEnv, ADMIN_TOKEN, type TestEnv } from '../helpers/env';

describe('operator API and HTTP frame', () => {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv();
  });
  after(async () => env.close());

  describe('admin authentication', () => {
    it('refuses a missing token with 401 auth-required and the error body', async () => {
      const res = await fetch(env.baseUrl + '/admin/merchants', { method: 'POST', body: '{}' });
      expect(res.status).to.equal(401);
      const body = (await res.json()) as any;
      expect(body.error.code).to.equal('auth-required');
      expect(body.error.request_id).to.equal(res.headers.get('x-request-id'));
    });

    it('refuses a wrong token, and a wrong basic password', async () => {
      const wrong = await env.admin('POST', '/admin/merchants', { name: 'x' }, { Authorization: 'Bearer nope' });
      expect(wrong.status).to.equal(401);
      const basic = await env.admin('GET', '/admin/maintenance', undefined, {
        Authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}`,
      });
      expect(basic.status).to.equal(401);
      const rows = await env.services.db('merchants').count<{ count: string }[]>('* as count');
      expect(Number(rows[0].count)).to.equal(0);
    });

    it('accepts the token as the password of HTTP basic', async () => {
      const res = await env.admin('GET', '/admin/maintenance', undefined, {
        Authorization: `Basic ${Buffer.from(`ops:${ADMIN_TOKEN}`).toString('base64')}`,
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ enabled: false, retry_after: 300 });
    });
  });

  describe('merchants', () => {
    it('creates a merchant with fees, bearer and limits', async () => {
      const res = await env.admin('POST', '/admin/merchants', {
        name: 'Kin Shop',
        fee_bearer: 'customer',
        fees: { USD: { percent_bps: 250, fixed: 10 } },
        per_tx_limit_usd: 500000,
      });
      expect(res.status).to.equal(201);
      expect(res.body.id).to.match(/^mer_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // the limit left out gets its default (docs/decisions.md#http-frame-and-operator-api)
      expect(res.body).to.include({
        name: 'Kin Shop',
        status: 'active',
        fee_bearer: 'customer',
        per_tx_limit_usd: 500000,
        per_tx_limit_cdf: 2_500_000_000,
      });
      expect(res.body.fees).to.deep.equal({ USD: { percent_bps: 250, fixed: 10 }, CDF: { percent_bps: 0, fixed: 0 } });
    });

    it('gives a merchant created without limits USD 1,000,000 and CDF 2,500,000,000 minor units; null is no limit of its own', async () => {
      const plain = await env.admin('POST', '/admin/merchants', { name: 'Defaults' });
      expect(plain.body).to.include({ per_tx_limit_usd: 1_000_000, per_tx_limit_cdf: 2_500_000_000 });
      const open = await env.admin('POST', '/admin/merchants', {
        name: 'Open',
        per_tx_limit_usd: null,
        per_tx_limit_cdf: null,
      });
      expect(open.body).to.include({ per_tx_limit_usd: null, per_tx_limit_cdf: null });
      const max = await env.admin('POST', '/admin/merchants', {
        name: 'Max',
        per_tx_limit_usd: 1e12,
        fees: { USD: { percent_bps: 10000, fixed: 1e12 } },
      });
      expect(max.status).to.equal(201);
      expect(max.body.per_tx_limit_usd).to.equal(1e12);
    });

    it('updates fees, limits and status', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'A' });
      const res = await env.admin('PATCH', `/admin/merchants/${m.id}`, {
        status: 'suspended',
        fees: { CDF: { percent_bps: 100, fixed: 0 } },
        per_tx_limit_cdf: 1000,
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ status: 'suspended', per_tx_limit_cdf: 1000 });
      expect(res.body.fees.CDF).to.deep.equal({ percent_bps: 100, fixed: 0 });
      expect(res.body.fees.USD).to.deep.equal({ percent_bps: 0, fixed: 0 });
    });

    const bad: [string, unknown, string][] = [
      ['missing name', {}, 'name'],
      ['empty name', { name: '' }, 'name'],
      ['unknown field', { name: 'x', colour: 'red' }, 'colour'],
      ['bad fee bearer', { name: 'x', fee_bearer: 'nobody' }, 'fee_bearer'],
      ['fractional fee', { name: 'x', fees: { USD: { percent_bps: 1.5, fixed: 0 } } }, 'fees.USD.percent_bps'],
      ['negative fixed fee', { name: 'x', fees: { CDF: { percent_bps: 0, fixed: -1 } } }, 'fees.CDF.fixed'],
      ['unknown currency', { name: 'x', fees: { EUR: { percent_bps: 0, fixed: 0 } } }, 'fees.EUR'],
      ['zero limit', { name: 'x', per_tx_limit_usd: 0 }, 'per_tx_limit_usd'],
      ['string limit', { name: 'x', per_tx_limit_usd: '100' }, 'per_tx_limit_usd'],
      ['a limit above 10^12', { name: 'x', per_tx_limit_usd: 1e12 + 1 }, 'per_tx_limit_usd'],
      ['a CDF limit beyond the safe integers', { name: 'x', per_tx_limit_cdf: 2 ** 53 + 2 }, 'per_tx_limit_cdf'],
      ['a fixed fee above 10^12', { name: 'x', fees: { USD: { percent_bps: 0, fixed: 1e12 + 1 } } }, 'fees.USD.fixed'],
    ];
    for (const [what, body, param] of bad) {
      it(`refuses ${what} with 400 validation-failed on ${param}`, async () => {
        const before = Number((await env.services.db('merchants').count('* as n'))[0].n);
        const res = await env.admin('POST', '/admin/merchants', body);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
        expect(Number((await env.services.db('merchants').count('* as n'))[0].n)).to.equal(before);
      });
    }

    it('refuses fees and limits above 10^12 on PATCH too, changing nothing', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'Patched' });
      for (const [body, param] of [
        [{ per_tx_limit_usd: 1e12 + 1 }, 'per_tx_limit_usd'],
        [{ per_tx_limit_cdf: Number.MAX_SAFE_INTEGER }, 'per_tx_limit_cdf'],
        [{ fees: { CDF: { percent_bps: 0, fixed: 1e12 + 1 } } }, 'fees.CDF.fixed'],
      ] as const) {
        const res = await env.admin('PATCH', `/admin/merchants/${m.id}`, body);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
      }
      expect((await env.admin('GET', `/admin/merchants/${m.id}`)).body).to.deep.equal(m);
    });

    it('refuses malformed JSON with 400 invalid-json and a non-JSON type with 415', async () => {
      const res = await env.admin('POST', '/admin/merchants', '{"name": ');
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('invalid-json');
      const res2 = await env.admin('POST', '/admin/merchants', 'name=x', { 'Content-Type': 'text/plain' });
      expect(res2.status).to.equal(415);
      expect(res2.body.error.code).to.equal('unsupported-media-type');
    });

    it('answers 404 not-found for unknown or malformed ids', async () => {
      for (const id of ['mer_00000000-0000-4000-8000-000000000000', 'nope']) {
        const res = await env.admin('PATCH', `/admin/merchants/${id}`, { name: 'x' });
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('not-found');
      }
    });
  });

  describe('credentials', () => {
    it('issues key, secret and webhook secret once; the database holds no plaintext secret', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'Cred' });
      const res = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, {
        environment: 'live',
        scope: 'payments',
        ip_allowlist: ['10.0.0.1'],
      });
      expect(res.status).to.equal(201);
      const c = res.body;
      expect(c.id).to.match(/^cred_/);
      expect(c.api_key).to.match(/^svc_live_[A-Za-z0-9_-]{32,}$/);
      expect(c.secret).to.match(/^sk_[A-Za-z0-9_-]{32,}$/);
      expect(c.webhook_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(c).to.include({ scope: 'payments', environment: 'live' });
      expect(c.ip_allowlist).to.deep.equal(['10.0.0.1']);

      const dump = JSON.stringify([
        await env.services.db('credentials').select('*'),
        await env.services.db('webhook_secrets').select('*'),
      ]);
      expect(dump).not.to.include(c.secret);
      expect(dump).not.to.include(c.webhook_secret);
      expect(dump).not.to.include(c.api_key);
      expect(dump).not.to.match(/"sk_|whsec_|svc_live_/);

      const second = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, {
        environment: 'live',
        scope: 'read',
      });
      expect(second.body.webhook_secret, 'one webhook secret per merchant and environment').to.equal(c.webhook_secret);
      expect(second.body.secret).not.to.equal(c.secret);
    });

    it('issues a credential for a suspended merchant', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'S' });
      await env.admin('PATCH', `/admin/merchants/${m.id}`, { status: 'suspended' });
      const res = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, {
        environment: 'test',
        scope: 'full',
      });
      expect(res.status).to.equal(201);
    });

    it('refuses a bad environment, scope or allowlist entry', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'B' });
      const cases: [unknown, string][] = [
        [{ environment: 'prod', scope: 'full' }, 'environment'],
        [{ environment: 'test', scope: 'admin' }, 'scope'],
        [{ environment: 'test', scope: 'full', ip_allowlist: ['not-an-ip'] }, 'ip_allowlist.0'],
      ];
      for (const [body, param] of cases) {
        const res = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, body);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.include({ code: 'validation-failed', param });
      }
      expect(await env.services.db('credentials').where({ merchant_id: m.id })).to.have.length(0);
    });

    it('revokes with a 7-day grace and issues a replacement with the same scope and allowlist', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'R' });
      const { body: c } = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, {
        environment: 'test',
        scope: 'payments',
        ip_allowlist: ['127.0.0.1'],
      });
      const res = await env.admin('POST', `/admin/credentials/${c.id}/revoke`, {});
      expect(res.status).to.equal(200);
      const { revoked, replacement } = res.body;
      expect(revoked.id).to.equal(c.id);
      expect(revoked.expires_at - revoked.revoked_at).to.equal(7 * 24 * 3600);
      expect(replacement).to.include({ scope: 'payments', environment: 'test' });
      expect(replacement.ip_allowlist).to.deep.equal(['127.0.0.1']);
      expect(replacement.api_key)
        .to.match(/^svc_test_/)
        .and.not.equal(c.api_key);

      const again = await env.admin('POST', `/admin/credentials/${c.id}/revoke`, {});
      expect(again.status).to.equal(409);
      const now = await env.admin('POST', `/admin/credentials/${c.id}/revoke`, { immediate: true });
      expect(now.status).to.equal(200);
      expect(now.body.revoked.expires_at).to.be.at.most(Math.floor(Date.now() / 1000));
      expect(now.body.replacement).to.equal(null);
    });

    it('revokes immediately', async () => {
      const { body: m } = await env.admin('POST', '/admin/merchants', { name: 'I' });
      const { body: c } = await env.admin('POST', `/admin/merchants/${m.id}/credentials`, {
        environment: 'test',
        scope: 'full',
      });
      const res = await env.admin('POST', `/admin/credentials/${c.id}/revoke`, { immediate: true });
      expect(res.body.revoked.expires_at).to.equal(res.body.revoked.revoked_at);
      const bad = await env.admin('POST', `/admin/credentials/${c.id}/revoke`, { immediate: 'yes' });
      expect(bad.status).to.equal(400);
    });
  });

  describe('HTTP frame', () => {
    it('sets the security headers on every response, errors included, and no cookie', async () => {
      for (const path of ['/health/live', '/nowhere', '/admin/merchants']) {
        const res = await fetch(env.baseUrl + path);
        expect(res.headers.get('strict-transport-security')).to.equal('max-age=63072000; includeSubDomains; preload');
        expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
        expect(res.headers.get('x-frame-options')).to.equal('DENY');
        expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
        expect(res.headers.get('permissions-policy')).to.equal('geolocation=(), microphone=(), camera=()');
        expect(res.headers.get('server')).to.equal('Service');
        expect(res.headers.get('set-cookie')).to.equal(null);
      }
    });

    it('frames the 3-D Secure return page only from the same origin', async () => {
      const res = await fetch(env.baseUrl + '/checkout/pay_x/3ds-return');
      expect(res.headers.get('x-frame-options')).to.equal('SAMEORIGIN');
      expect(res.headers.get('content-security-policy')).to.equal("frame-ancestors 'self'");
    });

    it('echoes a valid X-Request-Id and replaces an invalid one', async () => {
      const mine = await fetch(env.baseUrl + '/nowhere', { headers: { 'X-Request-Id': 'abc-123' } });
      expect(mine.headers.get('x-request-id')).to.equal('abc-123');
      expect(((await mine.json()) as any).error.request_id).to.equal('abc-123');
      const bad = await fetch(env.baseUrl + '/health/live', { headers: { 'X-Request-Id': 'x'.repeat(300) } });
      expect(bad.headers.get('x-request-id')).to.match(/^req_[0-9a-f-]{36}$/);
    });

    it('answers unknown routes with 404 not-found in the error body', async () => {
      const res = await fetch(env.baseUrl + '/v2/whatever');
      expect(res.status).to.equal(404);
      expect(await res.json()).to.deep.equal({
        error: { code: 'not-found', message: 'No such route', request_id: res.headers.get('x-request-id') },
      });
    });

    it('reports readiness of Postgres and Redis', async () => {
      const res = await fetch(env.baseUrl + '/health/ready');
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
    });

    it('serves Bull Board behind the admin token, listing every queue', async () => {
      expect((await fetch(env.baseUrl + '/admin/queues')).status).to.equal(401);
      const res = await env.admin('GET', '/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10');
      expect(res.status).to.equal(200);
      const names = res.body.queues.map((q: { name: string }) => q.name).sort();
      expect(names).to.deep.equal([
        'callback-reconciler',
        'card-charge',
        'payout',
        'provider-push',
        'refund',
        'webhook-sender',
      ]);
      const page = await env.admin('GET', '/admin/queues');
      expect(page.status).to.equal(200);
      expect(String(page.body)).to.include('<html');
    });
  });

  it('serves Prometheus metrics behind the admin token', async () => {
    expect((await fetch(env.baseUrl + '/metrics')).status).to.equal(401);
    await fetch(env.baseUrl + '/health/live');
    const res = await env.admin('GET', '/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    expect(res.body).to.match(/http_requests_total\{method="GET",route="\/health\/live",status="200"\} \d+/);
    expect(res.body).to.match(/queue_jobs\{queue="provider-push",state="waiting"\} 0/);
    expect(res.body).to.include('process_cpu_seconds_total');
  });

  it('labels metrics by route template or `unmatched`: random paths add no series', async () => {
    const series = async () => {
      const res = await env.admin('GET', '/metrics');
      return res.body.split('\n').filter((l: string) => l.startsWith('http_requests_total{'));
    };
    // warm up the label sets the loop below can reach (one per route template, method and status)
    const paths = (r: string) => [
      `/v1/${r}`,
      `/v1/payments/${r}`,
      `/admin/${r}`,
      `/${r}`,
      `/callbacks/${r}`,
      `/health/${r}`,
      `/v1/payments/pay_${r}/refunds`,
    ];
    const hit = async (r: string) => {
      for (const p of paths(r)) await fetch(env.baseUrl + p);
      await fetch(env.baseUrl + `/v1/payments/${r}`, { method: 'DELETE' });
    };
    await hit('warm-up');
    const before = await series();
    const random = Array.from({ length: 40 }, () => Math.random().toString(36).slice(2));
    for (const r of random) await hit(r);
    const after = await series();
    expect(
      after.length,
      after.filter((l: string) => !before.some((b: string) => b.split('} ')[0] === l.split('} ')[0])).join('\n'),
    ).to.equal(before.length);
    const text = after.join('\n');
    for (const r of random) expect(text).not.to.include(r);
    expect(after.join('\n')).to.match(/route="\/v1\/payments\/:id",status="401"/);
    expect(after.join('\n')).to.match(/route="unmatched",status="404"/);
  });

  it('answers a wrong method on the operator API with 405 method-not-allowed, the error body and Allow', async () => {
    for (const [method, path, allow] of [
      ['DELETE', '/admin/merchants', 'POST'],
      ['PUT', '/admin/merchants/mer_00000000-0000-4000-8000-000000000000', 'GET'],
      ['POST', '/admin/maintenance', 'GET'],
      ['DELETE', '/admin/webhooks', 'POST'],
    ] as const) {
      const res = await fetch(env.baseUrl + path, { method, headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(res.status, `${method} ${path}`).to.equal(405);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.headers.get('allow')).to.include(allow);
      const body = (await res.json()) as any;
      expect(body).to.deep.equal({
        error: { code: 'method-not-allowed', message: body.error.message, request_id: res.headers.get('x-request-id') },
      });
    }
    // without the token it is still the uniform 401
    expect((await fetch(env.baseUrl + '/admin/merchants', { method: 'DELETE' })).status).to.equal(401);
  });

  describe('maintenance mode', () => {
    afterEach(async () => env.admin('PUT', '/admin/maintenance', { enabled: false }));

    it('answers 503 maintenance with Retry-After while on; admin and health stay up', async () => {
      const on = await env.admin('PUT', '/admin/maintenance', { enabled: true, retry_after: 120 });
      expect(on.body).to.deep.equal({ enabled: true, retry_after: 120 });
      const res = await fetch(env.baseUrl + '/v1/payments');
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('120');
      expect(((await res.json()) as any).error.code).to.equal('maintenance');
      expect((await fetch(env.baseUrl + '/health/live')).status).to.equal(200);
      expect((await env.admin('GET', '/admin/maintenance')).status).to.equal(200);
      const callback = await fetch(env.baseUrl + '/callbacks/vodacom', { method: 'POST', body: '{}' });
      expect(callback.status, 'provider callbacks are not refused for maintenance').not.to.equal(503);
      await env.admin('PUT', '/admin/maintenance', { enabled: false });
      expect((await fetch(env.baseUrl + '/v1/payments')).status).not.to.equal(503);
    });

    it('refuses a malformed flag', async () => {
      const res = await env.admin('PUT', '/admin/maintenance', { enabled: 'yes' });
      expect(res.status).to.equal(400);
      expect(res.body.error.param).to.equal('enabled');
    });
  });
});
