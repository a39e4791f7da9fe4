import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { expect } from 'chai';
import { buildApp } from '../../api/app';
import { signRequest } from '../../shared/client/signing';
import { ManualClock } from '../../shared/clock';
import { createContext } from '../../shared/context';
import { Conflict, Unprocessable, ValidationFailed } from '../../shared/errors';
import { idempotentTransact, purgeExpiredIdempotencyKeys } from '../../shared/idempotency';
import { waitingOnLocks } from '../../scripts/lib/databases';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { send, sendRaw, type RawResponse } from '../helpers/http';

/**
 * The merchant pipeline of docs/decisions.md#merchant-pipeline through real HTTP, Postgres and Redis. Test routes stand in
 * for the resource routes (mounted after the pipeline, before v1Router, in this file's app only):
 * they record each call, so a test can tell whether a request reached a route.
 */

const CACHE_MS = 150;
/** How long a request waits for another holding its key (IDEMPOTENCY_WAIT_MS). */
const WAIT_MS = 1000;
/**
 * The app's clock: its credential cache, the end of a revoked key's grace and the freshness of a
 * signed request's timestamp read it, so the tests move it rather than sleep, and sign by it.
 */
const clock = new ManualClock(Date.now(), true);
const nowS = () => Math.floor(clock.now() / 1000);

interface Call {
  path: string;
  merchantId: string;
  body: unknown;
}
const calls: Call[] = [];
const gates = new Map<string, { opened: Promise<void>; open(): void; entered: Promise<void>; enter(): void }>();

function gate(name: string) {
  let open!: () => void;
  let enter!: () => void;
  const g = {
    opened: new Promise<void>((r) => (open = r)),
    open: () => open(),
    entered: new Promise<void>((r) => (enter = r)),
    enter: () => enter(),
  };
  gates.set(name, g);
  return g;
}

/**
 * POST /v1/payments and /v1/payouts stand-ins: the body's `mode` says how the "route" ends. Like
 * the real routes they write the Idempotency-Key in their own transaction (idempotentTransact);
 * a call is recorded only once the key is taken (the route's work).
 */
const idempotentRoute: Middleware = async (ctx) => {
  const body = (ctx.state.body ?? {}) as { mode?: string; gate?: string };
  const key = ctx.state.idempotency;
  const id = `pay_${randomUUID()}`;
  const location = `/v1/payments/${id}`;
  const write = key && {
    ...key.write,
    encode: (text: string) =>
      (key.stored = {
        status: 201,
        headers: { 'Content-Type': 'application/json', Location: location },
        body: Buffer.from(text),
      }),
  };
  const text = await idempotentTransact(ctx.services, write, async () => {
    calls.push({ path: ctx.path, merchantId: ctx.state.auth!.merchantId, body });
    if (body.gate) {
      const g = gates.get(body.gate)!;
      g.enter();
      await g.opened;
    }
    switch (body.mode) {
      case 'validation':
        throw new ValidationFailed('amount', 'amount must be a positive integer');
      case 'reference-conflict':
        throw new Conflict('reference-conflict', 'This reference is already used');
      case 'unprocessable':
        throw new Unprocessable('amount-over-limit', 'Over the limit');
      case 'boom':
        throw new Error('the route failed');
      default:
        // odd spacing and a fresh id: a replay must give back these very bytes, not a re-run
        return `{ "id" : "${id}",  "n": ${calls.length} }`;
    }
  });
  ctx.status = 201;
  ctx.set('Location', location);
  ctx.set('X-Not-Replayed', 'yes');
  ctx.type = 'application/json';
  ctx.body = text;
};

const testRoutes = new Router({ prefix: '/v1' });
testRoutes.post('/payments', idempotentRoute);
testRoutes.post('/payouts', idempotentRoute);
testRoutes.post('/payments/:id/refund', (ctx) => {
  calls.push({ path: ctx.path, merchantId: ctx.state.auth!.merchantId, body: ctx.state.body });
  ctx.status = 201;
  ctx.body = { refunded: true };
});
const echo: Middleware = (ctx) => {
  calls.push({ path: ctx.path, merchantId: ctx.state.auth!.merchantId, body: ctx.state.body });
  const a = ctx.state.auth!;
  ctx.body = {
    method: ctx.method,
    body: ctx.state.body ?? null,
    raw_length: ctx.state.rawBody?.length ?? null,
    auth: { merchantId: a.merchantId, credentialId: a.credentialId, environment: a.environment, scope: a.scope },
  };
};
testRoutes.get('/echo', echo);
testRoutes.post('/echo', echo);
testRoutes.patch('/echo', echo);
testRoutes.put('/echo', echo);
testRoutes.delete('/echo', echo);

const routes = testRoutes.routes() as Middleware;

describe('merchant request pipeline', () => {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv(
      { CREDENTIAL_CACHE_MS: String(CACHE_MS), IDEMPOTENCY_WAIT_MS: String(WAIT_MS) },
      { extraV1Routes: routes },
      { clock },
    );
  });
  after(async () => env.close());

  const idemRows = async () =>
    Number((await env.services.db('idempotency_keys').count<{ c: string }[]>('* as c'))[0].c);
  const callsOf = (m: MerchantFixture) => calls.filter((c) => c.merchantId === m.merchant.id);

  /** A signed request built by hand (the way a merchant's own code would), sent with full header control. */
  function signed(
    f: MerchantFixture,
    method: string,
    path: string,
    body: string | Buffer = '',
    extra: Record<string, string> = {},
    ts = String(nowS()),
  ): Promise<RawResponse> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${f.credential.api_key}`,
      ...(ts === '' ? {} : { 'X-Timestamp': ts }), // '' sends none
      'X-Signature': signRequest(f.credential.secret, ts, method, path.split('?')[0], body),
      ...(body.length ? { 'Content-Type': 'application/json' } : {}),
      ...extra,
    };
    return send(env.baseUrl, method, path, headers, body.length ? body : undefined);
  }

  describe('one failing step at a time, and two at once (the earlier step wins)', () => {
    type Prop = 'ip' | 'suspended' | 'limited' | 'read';
    interface Spec {
      props: Prop[];
      auth?: string | null;
      declaredLength?: string;
      ts: string;
      body: Buffer;
      badSignature: boolean;
      contentType: string;
      idempotencyKey: string | null;
    }
    interface Defect {
      name: string;
      /** defects touching the same part of the request are not combined */
      field: string;
      status: number;
      code: string;
      apply(s: Spec): void;
    }
    const big = Buffer.from(JSON.stringify({ mode: 'ok', pad: 'x'.repeat(100 * 1024) }));
    // in pipeline order: the expected code of a pair is the code of the first
    const defects: Defect[] = [
      {
        name: 'Content-Length above 500 MB',
        field: 'length',
        status: 413,
        code: 'payload-too-large',
        apply: (s) => void (s.declaredLength = String(500 * 1024 * 1024 + 1)),
      },
      {
        name: 'no Authorization header',
        field: 'auth',
        status: 401,
        code: 'auth-required',
        apply: (s) => void (s.auth = null),
      },
      {
        name: 'a Basic Authorization header',
        field: 'auth',
        status: 401,
        code: 'auth-required',
        apply: (s) => void (s.auth = 'Basic dXNlcjpwYXNz'),
      },
      {
        name: 'an unknown API key',
        field: 'auth',
        status: 401,
        code: 'api-key-invalid',
        apply: (s) => void (s.auth = `Bearer svc_test_${randomBytes(32).toString('base64url')}`),
      },
      {
        name: 'an address off the allowlist',
        field: 'ip',
        status: 403,
        code: 'ip-not-allowed',
        apply: (s) => void s.props.push('ip'),
      },
      {
        name: 'a suspended merchant',
        field: 'suspended',
        status: 403,
        code: 'merchant-suspended',
        apply: (s) => void s.props.push('suspended'),
      },
      {
        name: 'a key over its rate limit',
        field: 'limited',
        status: 429,
        code: 'rate-limit-exceeded',
        apply: (s) => void s.props.push('limited'),
      },
      {
        name: 'a timestamp 6 minutes old',
        field: 'ts',
        status: 401,
        code: 'timestamp-expired',
        apply: (s) => void (s.ts = String(nowS() - 360)),
      },
      {
        name: 'a payment body above 100 KB',
        field: 'body',
        status: 413,
        code: 'payload-too-large',
        apply: (s) => void (s.body = big),
      },
      {
        name: 'a wrong signature',
        field: 'sig',
        status: 401,
        code: 'signature-invalid',
        apply: (s) => void (s.badSignature = true),
      },
      {
        name: 'a read-scope key',
        field: 'read',
        status: 403,
        code: 'insufficient-scope',
        apply: (s) => void s.props.push('read'),
      },
      {
        name: 'a text/plain body',
        field: 'ctype',
        status: 415,
        code: 'unsupported-media-type',
        apply: (s) => void (s.contentType = 'text/plain'),
      },
      {
        name: 'malformed JSON',
        field: 'body',
        status: 400,
        code: 'invalid-json',
        apply: (s) => void (s.body = Buffer.from('{"mode": "ok",')),
      },
      {
        name: 'no Idempotency-Key',
        field: 'idem',
        status: 400,
        code: 'idempotency-key-required',
        apply: (s) => void (s.idempotencyKey = null),
      },
      {
        name: 'an Idempotency-Key that is not a UUID v4',
        field: 'idem',
        status: 400,
        code: 'idempotency-key-invalid',
        apply: (s) => void (s.idempotencyKey = '6ba7b810-9dad-11d1-80b4-00c04fd430c8'),
      },
    ];

    const fixtures = new Map<string, { at: number; f: Promise<MerchantFixture> }>();
    /**
     * One merchant per combination of properties, set up so that it really has them all. A
     * rate-limited one is remade after 30 s, well before its one-minute bucket ends.
     */
    function fixture(props: Prop[]): Promise<MerchantFixture> {
      const key = [...props].sort().join('+');
      const known = fixtures.get(key);
      if (!known || (props.includes('limited') && Date.now() - known.at > 30_000)) {
        fixtures.set(key, {
          at: Date.now(),
          f: (async () => {
            const f = await env.merchant({ scope: props.includes('read') ? 'read' : 'full' });
            if (props.includes('limited')) {
              for (let i = 0; i < 100; i++) expect((await f.client.get('/v1/echo')).status).to.equal(200);
              expect((await f.client.get('/v1/echo')).status).to.equal(429);
            }
            if (props.includes('ip'))
              await env.services
                .db('credentials')
                .where({ id: f.credential.id })
                .update({ ip_allowlist: ['10.20.30.40'] });
            if (props.includes('suspended'))
              expect(
                (await env.admin('PATCH', `/admin/merchants/${f.merchant.id}`, { status: 'suspended' })).status,
              ).to.equal(200);
            clock.advance(CACHE_MS + 50); // past the credential cache of the requests above
            return f;
          })(),
        });
      }
      return fixtures.get(key)!.f;
    }

    async function run(spec: Spec): Promise<RawResponse> {
      const f = await fixture(spec.props);
      const path = '/v1/payments';
      const secret = spec.badSignature ? `sk_${randomBytes(32).toString('base64url')}` : f.credential.secret;
      const headers: Record<string, string> = {
        'X-Timestamp': spec.ts,
        'X-Signature': signRequest(secret, spec.ts, 'POST', path, spec.body),
        'Content-Type': spec.contentType,
      };
      const auth = spec.auth === undefined ? `Bearer ${f.credential.api_key}` : spec.auth;
      if (auth !== null) headers.Authorization = auth;
      if (spec.idempotencyKey) headers['Idempotency-Key'] = spec.idempotencyKey;
      if (spec.declaredLength) {
        headers['Content-Length'] = spec.declaredLength;
        return send(env.baseUrl, 'POST', path, headers);
      }
      return send(env.baseUrl, 'POST', path, headers, spec.body);
    }

    const base = (): Spec => ({
      props: [],
      ts: String(nowS()),
      body: Buffer.from('{"mode":"ok","amount":100}'),
      badSignature: false,
      contentType: 'application/json',
      idempotencyKey: randomUUID(),
    });

    it('the request without any defect passes every step and reaches the route', async () => {
      const res = await run(base());
      expect(res.status, res.text).to.equal(201);
    });

    for (const d of defects) {
      it(`${d.name} → ${d.status} ${d.code}`, async () => {
        const s = base();
        d.apply(s);
        await fixture(s.props); // set up (and warmed up) before counting
        const before = calls.length;
        const rows = await idemRows();
        const res = await run(s);
        expect(res.status, res.text).to.equal(d.status);
        expect(res.body.error.code).to.equal(d.code);
        expect(res.body.error.request_id).to.equal(res.headers['x-request-id']);
        expect(calls.length, 'no route ran').to.equal(before);
        expect(await idemRows(), 'no idempotency key taken').to.equal(rows);
      });
    }

    for (let i = 0; i < defects.length; i++) {
      for (let j = i + 1; j < defects.length; j++) {
        const [first, second] = [defects[i], defects[j]];
        if (first.field === second.field) continue;
        it(`${first.name} + ${second.name} → ${first.code}`, async () => {
          const s = base();
          first.apply(s);
          second.apply(s);
          const res = await run(s);
          expect(res.status, res.text).to.equal(first.status);
          expect(res.body.error.code).to.equal(first.code);
        });
      }
    }
  });

  describe('1. body size', () => {
    it('answers 413 to a declared 500 MB + 1 body from the head alone, and closes the connection', async () => {
      const { credential } = await env.merchant();
      const res = await sendRaw(
        env.baseUrl,
        `POST /v1/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${credential.api_key}\r\nContent-Type: application/json\r\nContent-Length: ${500 * 1024 * 1024 + 1}\r\n\r\n`,
      );
      expect(res.status).to.equal(413);
      expect(res.head).to.match(/\r\nconnection: close/i);
    });

    it('lets exactly 500 MB declared past step 1 (an unauthenticated one then gets its 401)', async () => {
      const at = await send(env.baseUrl, 'POST', '/v1/echo', { 'Content-Length': String(500 * 1024 * 1024) });
      expect(at.status).to.equal(401);
      const over = await send(env.baseUrl, 'POST', '/v1/echo', { 'Content-Length': String(500 * 1024 * 1024 + 1) });
      expect(over.status).to.equal(413);
      expect(over.body.error.code).to.equal('payload-too-large');
    });

    it('accepts a payment body of exactly 100 KB and refuses 100 KB + 1 with 413 payload-too-large', async () => {
      const f = await env.merchant();
      const mk = (size: number) => {
        const head = '{"mode":"ok","pad":"';
        return head + 'x'.repeat(size - head.length - 2) + '"}';
      };
      const ok = await signed(f, 'POST', '/v1/payments', mk(100 * 1024), { 'Idempotency-Key': randomUUID() });
      expect(ok.status, ok.text).to.equal(201);
      const tooBig = await signed(f, 'POST', '/v1/payments', mk(100 * 1024 + 1), { 'Idempotency-Key': randomUUID() });
      expect(tooBig.status).to.equal(413);
      expect(tooBig.body.error.code).to.equal('payload-too-large');
    });

    it('gives other routes 1 MB, also for chunked bodies without a length', async () => {
      const f = await env.merchant();
      const body = JSON.stringify({ pad: 'y'.repeat(500 * 1024) });
      const ok = await signed(f, 'POST', '/v1/echo', body);
      expect(ok.status).to.equal(200);
      expect(ok.body.raw_length).to.equal(Buffer.byteLength(body));
      const over = JSON.stringify({ pad: 'y'.repeat(1024 * 1024) });
      const ts = String(nowS());
      const chunked = await send(
        env.baseUrl,
        'POST',
        '/v1/echo',
        {
          Authorization: `Bearer ${f.credential.api_key}`,
          'X-Timestamp': ts,
          'X-Signature': signRequest(f.credential.secret, ts, 'POST', '/v1/echo', over),
          'Content-Type': 'application/json',
          'Transfer-Encoding': 'chunked',
        },
        over,
      );
      expect(chunked.status).to.equal(413);
    });
  });

  describe('request target', () => {
    it('answers a target Node cannot parse with 400 and the error body, not a bare 500', async () => {
      const { credential } = await env.merchant();
      for (const target of ['http://a]b/v1/echo', 'http://a]b/health/live']) {
        const res = await sendRaw(
          env.baseUrl,
          `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${credential.api_key}\r\n\r\n`,
        );
        expect(res.status, target).to.equal(400);
        expect(res.head, target).to.match(/\r\nX-Request-Id: req_/i);
      }
    });
  });

  describe('2-3. bearer token and key lookup', () => {
    it('fills ctx.state.auth with the caller of a valid key', async () => {
      const f = await env.merchant({ scope: 'payments', environment: 'live' });
      const res = await f.client.get('/v1/echo');
      expect(res.status).to.equal(200);
      expect(res.body.auth).to.deep.equal({
        merchantId: f.merchant.id,
        credentialId: f.credential.id,
        environment: 'live',
        scope: 'payments',
      });
    });

    it('refuses a key sent with the other environment prefix', async () => {
      const f = await env.merchant({ environment: 'test' });
      const swapped = f.credential.api_key.replace(/^svc_test_/, 'svc_live_');
      const res = await send(env.baseUrl, 'GET', '/v1/echo', { Authorization: `Bearer ${swapped}` });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('api-key-invalid');
    });

    it('treats the scheme case-insensitively but refuses a token that is not an API key', async () => {
      const f = await env.merchant();
      const lower = await send(env.baseUrl, 'GET', '/v1/echo', { Authorization: `bearer ${f.credential.api_key}` });
      expect(lower.status).to.equal(200);
      for (const auth of ['Bearer', 'Bearer ', `Bearer ${f.credential.api_key} extra`, 'Token abc']) {
        const res = await send(env.baseUrl, 'GET', '/v1/echo', { Authorization: auth });
        expect(res.status, auth).to.equal(401);
        expect(res.body.error.code, auth).to.equal('auth-required');
      }
      const notKey = await send(env.baseUrl, 'GET', '/v1/echo', { Authorization: 'Bearer sk_not_an_api_key' });
      expect(notKey.body.error.code).to.equal('api-key-invalid');
    });

    it('guards /v1 paths whatever their case or trailing slash (the router ignores both)', async () => {
      const before = calls.length;
      for (const path of ['/V1/echo', '/v1/ECHO', '/v1/echo/', '/V1/PAYMENTS', '/v1']) {
        const res = await send(env.baseUrl, path === '/V1/PAYMENTS' ? 'POST' : 'GET', path);
        expect(res.status, path).to.equal(401);
      }
      expect(calls.length, 'no route ran').to.equal(before);
    });

    it('keeps a key revoked with grace working until the grace ends, then refuses it', async () => {
      const f = await env.merchant();
      expect((await f.client.get('/v1/echo')).status).to.equal(200);
      const rev = await env.admin('POST', `/admin/credentials/${f.credential.id}/revoke`, {});
      expect(rev.status).to.equal(200);
      clock.advance(CACHE_MS + 50);
      expect((await f.client.get('/v1/echo')).status, 'in its grace').to.equal(200);
      const replacement = env.client(rev.body.replacement);
      expect((await replacement.post('/v1/echo', { a: 1 })).status).to.equal(200);
      // the grace ends
      await env.services
        .db('credentials')
        .where({ id: f.credential.id })
        .update({ expires_at: new Date(clock.now() - 1000) });
      clock.advance(CACHE_MS + 50);
      const res = await f.client.get('/v1/echo');
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('api-key-invalid');
    });

    it('refuses a key once the end of its grace passes' + ' (checked on every request, cached or not)', async () => {
      const f = await env.merchant();
      await env.services
        .db('credentials')
        .where({ id: f.credential.id })
        .update({ revoked_at: new Date(), expires_at: new Date(clock.now() + 600) });
      expect((await f.client.get('/v1/echo')).status).to.equal(200);
      clock.advance(700);
      expect((await f.client.get('/v1/echo')).status).to.equal(401);
    });

    it('honours an immediate revocation within the credential cache time', async () => {
      const f = await env.merchant();
      expect((await f.client.get('/v1/echo')).status).to.equal(200);
      expect(
        (await env.admin('POST', `/admin/credentials/${f.credential.id}/revoke`, { immediate: true })).status,
      ).to.equal(200);
      clock.advance(CACHE_MS + 50);
      const res = await f.client.get('/v1/echo');
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('api-key-invalid');
    });
  });

  describe('4. IP allowlist', () => {
    it('lets a listed socket address in and refuses others with 403 ip-not-allowed', async () => {
      const listed = await env.merchant({ ip_allowlist: ['127.0.0.1'] });
      expect((await listed.client.get('/v1/echo')).status).to.equal(200);
      const other = await env.merchant({ ip_allowlist: ['10.1.2.3', '::1'] });
      const res = await other.client.get('/v1/echo');
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('ip-not-allowed');
    });

    it('ignores X-Forwarded-For when no trusted proxy is configured', async () => {
      const f = await env.merchant({ ip_allowlist: ['10.1.2.3'] });
      const res = await f.client.get('/v1/echo', { headers: { 'X-Forwarded-For': '10.1.2.3' } });
      expect(res.status).to.equal(403);
    });

    describe('behind one trusted proxy (TRUSTED_PROXIES=1)', () => {
      let proxied: TestEnv;
      before(async () => {
        proxied = await startTestEnv({ TRUSTED_PROXIES: '1' }, { extraV1Routes: routes });
      });
      after(async () => proxied.close());

      it('takes the address the proxy appended, not one the client forged before it', async () => {
        const f = await proxied.merchant({ ip_allowlist: ['203.0.113.7'] });
        const ok = await f.client.get('/v1/echo', { headers: { 'X-Forwarded-For': '203.0.113.7' } });
        expect(ok.status).to.equal(200);
        const forged = await f.client.get('/v1/echo', { headers: { 'X-Forwarded-For': '203.0.113.7, 198.51.100.1' } });
        expect(forged.status).to.equal(403);
        expect(forged.body.error.code).to.equal('ip-not-allowed');
        const none = await f.client.get('/v1/echo');
        expect(none.status, 'no header: the socket address, not on the list').to.equal(403);
      });
    });
  });

  describe('5. merchant status', () => {
    it('refuses a suspended merchant with 403 merchant-suspended and admits it again once reactivated', async () => {
      const f = await env.merchant();
      expect((await f.client.get('/v1/echo')).status).to.equal(200);
      await env.admin('PATCH', `/admin/merchants/${f.merchant.id}`, { status: 'suspended' });
      clock.advance(CACHE_MS + 50);
      const res = await f.client.post('/v1/echo', { a: 1 });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('merchant-suspended');
      await env.admin('PATCH', `/admin/merchants/${f.merchant.id}`, { status: 'active' });
      clock.advance(CACHE_MS + 50);
      expect((await f.client.get('/v1/echo')).status).to.equal(200);
    });
  });

  describe('6. rate limit', () => {
    it('allows 100 requests per key per minute bucket, then 429 with Retry-After; headers on every response', async () => {
      const f = await env.merchant();
      const other = await env.merchant();
      let firstReset = 0;
      for (let i = 1; i <= 100; i++) {
        const res = await f.client.get(i % 10 === 0 ? '/v1/nowhere' : '/v1/echo');
        expect(res.status).to.equal(i % 10 === 0 ? 404 : 200);
        expect(res.headers.get('x-ratelimit-limit')).to.equal('100');
        expect(res.headers.get('x-ratelimit-remaining')).to.equal(String(100 - i));
        const reset = Number(res.headers.get('x-ratelimit-reset'));
        if (i === 1) firstReset = reset;
        expect(reset).to.be.within(nowS(), nowS() + 61);
        expect(Math.abs(reset - firstReset), 'one bucket').to.be.at.most(1);
      }
      const res = await f.client.get('/v1/echo');
      expect(res.status).to.equal(429);
      expect(res.body.error.code).to.equal('rate-limit-exceeded');
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, 60);
      expect(Number(res.headers.get('x-ratelimit-reset')) - nowS()).to.be.within(retryAfter - 2, retryAfter + 1);
      expect(res.headers.get('x-ratelimit-remaining')).to.equal('0');
      // another key is not affected
      expect((await other.client.get('/v1/echo')).status).to.equal(200);
    });

    it('counts in Redis: two web processes share one bucket per key', async () => {
      const second = buildApp(env.services, { extraV1Routes: routes });
      const server: Server = await new Promise((resolve) => {
        const s = second.listen(0, '127.0.0.1', () => resolve(s));
      });
      try {
        const f = await env.merchant();
        const other = env.client(f.credential, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
        for (let i = 0; i < 50; i++) {
          expect((await f.client.get('/v1/echo')).status).to.equal(200);
          expect((await other.get('/v1/echo')).status).to.equal(200);
        }
        expect((await other.get('/v1/echo')).status).to.equal(429);
        expect((await f.client.get('/v1/echo')).status).to.equal(429);
      } finally {
        await new Promise((r) => server.close(r));
        server.closeAllConnections();
      }
    });

    it('answers 503 (no hang, no pass) when Redis is unreachable', async () => {
      const f = await env.merchant();
      const services = createContext({
        role: 'web',
        name: 'web-no-redis',
        config: { ...env.config, redisUrl: 'redis://127.0.0.1:1' },
      });
      const app = buildApp(services, { extraV1Routes: routes });
      const server: Server = await new Promise((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      try {
        const client = env.client(f.credential, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
        const before = callsOf(f).length;
        const res = await client.post('/v1/payments', { mode: 'ok' });
        expect(res.status).to.equal(503);
        expect(res.body.error.code).to.equal('service-unavailable');
        expect(res.headers.get('retry-after')).to.equal('5');
        expect(callsOf(f).length).to.equal(before);
      } finally {
        await new Promise((r) => server.close(r));
        server.closeAllConnections();
        await services.close();
      }
    });
  });

  describe('7. timestamp', () => {
    const cases: [string, (now: number) => string][] = [
      ['missing', () => ''],
      ['not a number', () => 'yesterday'],
      ['a decimal', (n) => `${n}.5`],
      ['negative', (n) => `-${n}`],
      ['in milliseconds', () => String(Date.now())],
      ['300 s old', (n) => String(n - 300)],
      // one second more than the bound: the server's clock may tick between this reading and its own
      // (the exact bounds, 300 s either way, are the unit test's: test/unit/pipeline.test.ts)
      ['301 s ahead', (n) => String(n + 301)],
    ];
    for (const [what, ts] of cases) {
      it(`refuses a timestamp ${what} with 401 timestamp-expired`, async () => {
        const f = await env.merchant();
        const res = await signed(f, 'POST', '/v1/echo', '{"a":1}', {}, ts(nowS()));
        expect(res.status).to.equal(401);
        expect(res.body.error.code).to.equal('timestamp-expired');
      });
    }

    it('accepts a timestamp 298 s old or ahead, and needs none on GET', async () => {
      const f = await env.merchant();
      expect((await signed(f, 'POST', '/v1/echo', '{"a":1}', {}, String(nowS() - 298))).status).to.equal(200);
      expect((await signed(f, 'POST', '/v1/echo', '{"a":1}', {}, String(nowS() + 298))).status).to.equal(200);
      expect(
        (await send(env.baseUrl, 'GET', '/v1/echo', { Authorization: `Bearer ${f.credential.api_key}` })).status,
      ).to.equal(200);
    });

    it('requires it on PATCH, PUT and DELETE as well', async () => {
      const f = await env.merchant();
      for (const method of ['PATCH', 'PUT', 'DELETE']) {
        const res = await f.client.request(method, '/v1/echo', { omitHeaders: ['X-Timestamp'] });
        expect(res.status, method).to.equal(401);
        expect(res.body.error.code).to.equal('timestamp-expired');
        expect(
          (await f.client.request(method, '/v1/echo', method === 'DELETE' ? {} : { body: { a: 1 } })).status,
          method,
        ).to.equal(200);
      }
    });
  });

  describe('8. signature', () => {
    it('accepts the signing client on every signed method, with a query string outside the signed path', async () => {
      const f = await env.merchant();
      expect((await f.client.post('/v1/echo?x=1', { a: 1 })).status).to.equal(200);
      expect((await f.client.patch('/v1/echo', { a: 1 })).status).to.equal(200);
      expect((await f.client.delete('/v1/echo')).status).to.equal(200);
      const empty = await f.client.post('/v1/echo');
      expect(empty.status).to.equal(200);
      expect(empty.body.body).to.deep.equal({});
    });

    it('refuses every way of getting it wrong with 401 signature-invalid', async () => {
      const f = await env.merchant();
      const body = '{"a": 1}';
      const ts = String(nowS());
      const good = signRequest(f.credential.secret, ts, 'POST', '/v1/echo', body);
      const wrong: [string, Record<string, string>, string?][] = [
        ['missing', { 'X-Signature': '' }],
        ['upper-case hex', { 'X-Signature': good.toUpperCase() }],
        ['with an algorithm prefix', { 'X-Signature': `sha256=${good}` }],
        ['truncated', { 'X-Signature': good.slice(0, 63) }],
        ['one byte', { 'X-Signature': 'ab' }],
        ['very long', { 'X-Signature': good.repeat(50) }],
        ['over another body', { 'X-Signature': signRequest(f.credential.secret, ts, 'POST', '/v1/echo', '{"a":1}') }],
        ['over another path', { 'X-Signature': signRequest(f.credential.secret, ts, 'POST', '/v1/payments', body) }],
        ['over another method', { 'X-Signature': signRequest(f.credential.secret, ts, 'PATCH', '/v1/echo', body) }],
        [
          'over another timestamp',
          { 'X-Signature': signRequest(f.credential.secret, String(Number(ts) - 1), 'POST', '/v1/echo', body) },
        ],
        [
          'with another secret',
          { 'X-Signature': signRequest(`sk_${randomBytes(32).toString('base64url')}`, ts, 'POST', '/v1/echo', body) },
        ],
        [
          'over the path with its query',
          { 'X-Signature': signRequest(f.credential.secret, ts, 'POST', '/v1/echo?x=1', body) },
          '/v1/echo?x=1',
        ],
      ];
      for (const [what, headers, path] of wrong) {
        const res = await signed(f, 'POST', path ?? '/v1/echo', body, headers, ts);
        expect(res.status, what).to.equal(401);
        expect(res.body.error.code, what).to.equal('signature-invalid');
      }
      expect((await signed(f, 'POST', '/v1/echo', body, { 'X-Signature': good }, ts)).status).to.equal(200);
    });

    it('covers the exact bytes: the same JSON with other spacing needs its own signature', async () => {
      const f = await env.merchant();
      const ts = String(nowS());
      const sig = signRequest(f.credential.secret, ts, 'POST', '/v1/echo', '{"a":1}');
      const res = await signed(f, 'POST', '/v1/echo', '{"a": 1}', { 'X-Signature': sig }, ts);
      expect(res.status).to.equal(401);
    });

    it('signs the path as sent: /V1/ECHO signed as /v1/echo is refused', async () => {
      const f = await env.merchant();
      const ts = String(nowS());
      const res = await signed(
        f,
        'POST',
        '/V1/ECHO',
        '{}',
        { 'X-Signature': signRequest(f.credential.secret, ts, 'POST', '/v1/echo', '{}') },
        ts,
      );
      expect(res.status).to.equal(401);
      expect((await signed(f, 'POST', '/V1/ECHO', '{}')).status).to.equal(200);
    });
  });

  describe('uniform 401s', () => {
    it('have the same headers and shape whichever step refused, and one fixed message per code', async () => {
      const f = await env.merchant();
      const ts = String(nowS());
      const responses = {
        'auth-required': await send(env.baseUrl, 'POST', '/v1/echo', {}, '{}'),
        'api-key-invalid': await send(env.baseUrl, 'POST', '/v1/echo', { Authorization: 'Bearer svc_test_nope' }, '{}'),
        'timestamp-expired': await signed(f, 'POST', '/v1/echo', '{}', {}, String(nowS() - 1000)),
        'signature-invalid': await signed(f, 'POST', '/v1/echo', '{}', { 'X-Signature': '00' }, ts),
      };
      const varying = new Set(['date', 'x-request-id', 'content-length']);
      const shape = (r: RawResponse) =>
        Object.entries(r.headers)
          .filter(([k]) => !varying.has(k))
          .sort(([a], [b]) => a.localeCompare(b));
      const reference = shape(responses['auth-required']);
      for (const [code, res] of Object.entries(responses)) {
        expect(res.status, code).to.equal(401);
        expect(res.body.error.code).to.equal(code);
        expect(Object.keys(res.body.error).sort()).to.deep.equal(['code', 'message', 'request_id']);
        expect(shape(res), code).to.deep.equal(reference);
        expect(res.headers['x-ratelimit-limit'], code).to.equal(undefined);
      }
      expect(responses['auth-required'].headers['www-authenticate']).to.equal('Bearer realm="api"');
      // same code, other cause: same message
      const again = await signed(
        f,
        'POST',
        '/v1/echo',
        '{}',
        { 'X-Signature': signRequest('sk_other', ts, 'POST', '/v1/echo', '{}') },
        ts,
      );
      expect(again.body.error.message).to.equal(responses['signature-invalid'].body.error.message);
      const missing = await signed(f, 'POST', '/v1/echo', '{}', {}, '');
      expect(missing.body.error.message).to.equal(responses['timestamp-expired'].body.error.message);
    });
  });

  describe('scopes (5.5)', () => {
    const matrix: [scope: 'read' | 'payments' | 'full', method: string, path: string, allowed: boolean][] = [
      ['read', 'GET', '/v1/echo', true],
      ['read', 'POST', '/v1/payments', false],
      ['read', 'POST', '/v1/echo', false],
      ['read', 'DELETE', '/v1/echo', false],
      ['payments', 'GET', '/v1/echo', true],
      ['payments', 'POST', '/v1/payments', true],
      ['payments', 'POST', '/V1/Payments/', true],
      ['payments', 'POST', '/v1/payments/pay_x/refund', false],
      ['payments', 'POST', '/v1/payouts', false],
      ['payments', 'PATCH', '/v1/echo', false],
      ['full', 'POST', '/v1/payouts', true],
      ['full', 'POST', '/v1/payments/pay_x/refund', true],
      ['full', 'PUT', '/v1/echo', true],
    ];
    for (const [scope, method, path, allowed] of matrix) {
      it(`${scope}: ${method} ${path} → ${allowed ? 'allowed' : '403 insufficient-scope'}`, async () => {
        const f = await env.merchant({ scope });
        const before = callsOf(f).length;
        const res = await f.client.request(
          method,
          path,
          method === 'GET' || method === 'DELETE' ? {} : { body: { mode: 'ok' }, idempotencyKey: randomUUID() },
        );
        if (allowed) {
          expect(res.status, res.text).to.be.oneOf([200, 201]);
          expect(callsOf(f).length).to.equal(before + 1);
        } else {
          expect(res.status).to.equal(403);
          expect(res.body.error.code).to.equal('insufficient-scope');
          expect(callsOf(f).length).to.equal(before);
          expect(res.headers.get('x-ratelimit-remaining'), 'rate-limit headers on a 403').to.equal('99');
        }
      });
    }
  });

  describe('content type and JSON', () => {
    it('refuses non-JSON types, other charsets and encoded bodies with 415; bad JSON and bad UTF-8 with 400 invalid-json', async () => {
      const f = await env.merchant();
      const cases: [string, Record<string, string>, string | Buffer, number, string][] = [
        ['text/plain', { 'Content-Type': 'text/plain' }, '{"a":1}', 415, 'unsupported-media-type'],
        ['form', { 'Content-Type': 'application/x-www-form-urlencoded' }, 'a=1', 415, 'unsupported-media-type'],
        ['no type', { 'Content-Type': '' }, '{"a":1}', 415, 'unsupported-media-type'],
        [
          'latin-1',
          { 'Content-Type': 'application/json; charset=iso-8859-1' },
          '{"a":1}',
          415,
          'unsupported-media-type',
        ],
        ['gzip', { 'Content-Encoding': 'gzip' }, '{"a":1}', 415, 'unsupported-media-type'],
        ['truncated JSON', {}, '{"a":', 400, 'invalid-json'],
        [
          'JSON with a BOM',
          {},
          Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]),
          400,
          'invalid-json',
        ],
        [
          'invalid UTF-8',
          {},
          Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
          400,
          'invalid-json',
        ],
      ];
      for (const [what, headers, body, status, code] of cases) {
        const h = { ...headers };
        if (h['Content-Type'] === '') delete h['Content-Type'];
        const res = await signed(
          f,
          'POST',
          '/v1/echo',
          body,
          headers['Content-Type'] === '' ? { 'Content-Type': '' } : h,
        );
        expect(res.status, what).to.equal(status);
        expect(res.body.error.code, what).to.equal(code);
      }
      const ok = await signed(f, 'POST', '/v1/echo', '{"a":[1,2,{"b":"é"}]}', {
        'Content-Type': 'application/json; charset=utf-8',
      });
      expect(ok.status).to.equal(200);
      expect(ok.body.body).to.deep.equal({ a: [1, 2, { b: 'é' }] });
    });

    it('checks the signature before the content type: a bad signature on a text/plain body is a 401', async () => {
      const f = await env.merchant();
      const res = await signed(f, 'POST', '/v1/echo', 'not json', {
        'Content-Type': 'text/plain',
        'X-Signature': '00',
      });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('signature-invalid');
    });
  });

  // the one mode, through stand-in routes that write their key like the real ones; the real POST /v1/payments is in payments.test.ts
  describe('9. idempotency', () => {
    it('replays the stored response byte for byte with its status, Location and Idempotent-Replayed, without running again', async () => {
      const f = await env.merchant();
      const key = randomUUID();
      const first = await f.client.post('/v1/payouts', { mode: 'ok', amount: 100 }, { idempotencyKey: key });
      expect(first.status).to.equal(201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      expect(callsOf(f)).to.have.length(1);
      for (const k of [key, key.toUpperCase()]) {
        const again = await f.client.post('/v1/payouts', { mode: 'ok', amount: 100 }, { idempotencyKey: k });
        expect(again.status).to.equal(201);
        expect(again.text).to.equal(first.text);
        expect(again.headers.get('content-type')).to.equal(first.headers.get('content-type'));
        expect(again.headers.get('location')).to.equal(first.headers.get('location'));
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(again.headers.get('x-not-replayed'), 'only chosen headers are stored').to.equal(null);
      }
      expect(callsOf(f)).to.have.length(1);
      const row = await env.services.db('idempotency_keys').where({ merchant_id: f.merchant.id }).first();
      expect(row).to.include({
        status: 'completed',
        response_status: 201,
        method: 'POST',
        path: '/v1/payouts',
        environment: 'test',
      });
      expect(Buffer.from(row.response_body).toString()).to.equal(first.text);
      expect(new Date(row.expires_at).getTime() - clock.now()).to.be.within(23.9 * 3600e3, 24 * 3600e3);
    });

    it('answers 409 idempotency-conflict to the same key with another body, method-path or route', async () => {
      const f = await env.merchant();
      const key = randomUUID();
      expect(
        (await f.client.post('/v1/payouts', { mode: 'ok', amount: 100 }, { idempotencyKey: key })).status,
      ).to.equal(201);
      for (const [path, body] of [
        ['/v1/payouts', { mode: 'ok', amount: 101 }],
        ['/v1/payouts', '{"mode":"ok", "amount":100}'],
        ['/v1/payments', { mode: 'ok', amount: 100 }],
      ] as const) {
        const res = await f.client.post(path, body, { idempotencyKey: key });
        expect(res.status, `${path} ${JSON.stringify(body)}`).to.equal(409);
        expect(res.body.error.code).to.equal('idempotency-conflict');
      }
      // the atomic POST /v1/payments runs its route, whose work is written with the key or not at all (payments.test.ts)
      expect(callsOf(f).filter((c) => c.path === '/v1/payouts')).to.have.length(1);
    });

    it('answers 409 idempotency-in-progress with Retry-After: 1 once the wait for the first request is over, then replays it', async () => {
      const f = await env.merchant();
      const key = randomUUID();
      const g = gate(randomUUID());
      const body = { mode: 'ok', gate: [...gates.keys()].pop() };
      const first = f.client.post('/v1/payouts', body, { idempotencyKey: key });
      await g.entered;
      const started = Date.now();
      const concurrent = await Promise.all(
        Array.from({ length: 8 }, () => f.client.post('/v1/payouts', body, { idempotencyKey: key })),
      );
      expect(Date.now() - started, 'they waited for the first request (IDEMPOTENCY_WAIT_MS)').to.be.at.least(
        WAIT_MS - 50,
      );
      for (const res of concurrent) {
        expect(res.status).to.equal(409);
        expect(res.body.error.code).to.equal('idempotency-in-progress');
        expect(res.headers.get('retry-after')).to.equal('1');
      }
      // another body meanwhile waits too, and is a conflict once the first is done
      const other = f.client.post('/v1/payouts', { mode: 'ok', other: true }, { idempotencyKey: key });
      await waitingOnLocks(env.services.db, 1);
      g.open();
      expect((await other).body.error.code, 'another body is a conflict').to.equal('idempotency-conflict');
      const done = await first;
      expect(done.status).to.equal(201);
      const replay = await f.client.post('/v1/payouts', body, { idempotencyKey: key });
      expect(replay.text).to.equal(done.text);
      expect(callsOf(f)).to.have.length(1);
    });

    it('makes a request with the key of a running one wait for it and answers with its answer', async () => {
      const f = await env.merchant();
      const key = randomUUID();
      const g = gate(randomUUID());
      const body = { mode: 'ok', gate: [...gates.keys()].pop() };
      const first = f.client.post('/v1/payouts', body, { idempotencyKey: key });
      await g.entered;
      const duplicates = Array.from({ length: 4 }, () => f.client.post('/v1/payouts', body, { idempotencyKey: key }));
      await waitingOnLocks(env.services.db, 4);
      g.open();
      const done = await first;
      for (const res of await Promise.all(duplicates)) {
        expect(res.status).to.equal(201);
        expect(res.text).to.equal(done.text);
        expect(res.headers.get('idempotent-replayed')).to.equal('true');
      }
      expect(callsOf(f)).to.have.length(1);
    });

    it('runs exactly one of many simultaneous first requests with one key', async () => {
      const f = await env.merchant();
      const key = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 12 }, () => f.client.post('/v1/payouts', { mode: 'ok' }, { idempotencyKey: key })),
      );
      expect(callsOf(f)).to.have.length(1);
      const created = results.filter((r) => r.status === 201);
      expect(created.length).to.be.at.least(1);
      expect(new Set(created.map((r) => r.text)).size, 'every 201 is the one response').to.equal(1);
      for (const r of results.filter((x) => x.status !== 201))
        expect(r.body.error.code).to.equal('idempotency-in-progress');
    });

    it('leaves the key free after a validation failure or a server error', async () => {
      for (const mode of ['validation', 'boom']) {
        const f = await env.merchant();
        const key = randomUUID();
        const failed = await f.client.post('/v1/payments', { mode }, { idempotencyKey: key });
        expect(failed.status).to.equal(mode === 'validation' ? 400 : 500);
        expect(await env.services.db('idempotency_keys').where({ merchant_id: f.merchant.id })).to.have.length(0);
        const retried = await f.client.post('/v1/payments', { mode: 'ok', fixed: true }, { idempotencyKey: key });
        expect(retried.status, mode).to.equal(201);
        expect(retried.headers.get('idempotent-replayed')).to.equal(null);
      }
    });

    it('stores and replays a 409 reference-conflict and a 422 like any other outcome', async () => {
      for (const [mode, status, code] of [
        ['reference-conflict', 409, 'reference-conflict'],
        ['unprocessable', 422, 'amount-over-limit'],
      ] as const) {
        const f = await env.merchant();
        const key = randomUUID();
        const first = await f.client.post('/v1/payouts', { mode }, { idempotencyKey: key });
        expect(first.status).to.equal(status);
        expect(first.body.error.code).to.equal(code);
        const again = await f.client.post('/v1/payouts', { mode }, { idempotencyKey: key });
        expect(again.status).to.equal(status);
        expect(again.text).to.equal(first.text);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(callsOf(f)).to.have.length(1);
      }
    });

    it('keeps keys apart per merchant and per environment', async () => {
      const a = await env.merchant();
      const b = await env.merchant();
      const live = await env.admin('POST', `/admin/merchants/${a.merchant.id}/credentials`, {
        environment: 'live',
        scope: 'full',
      });
      const aLive = env.client(live.body);
      const key = randomUUID();
      const results = [
        await a.client.post('/v1/payments', { mode: 'ok' }, { idempotencyKey: key }),
        await b.client.post('/v1/payments', { mode: 'ok' }, { idempotencyKey: key }),
        await aLive.post('/v1/payments', { mode: 'ok' }, { idempotencyKey: key }),
      ];
      for (const r of results) {
        expect(r.status).to.equal(201);
        expect(r.headers.get('idempotent-replayed')).to.equal(null);
      }
      expect(new Set(results.map((r) => r.text)).size).to.equal(3);
    });

    it('applies to POST /v1/payments and /v1/payouts only, whatever the path case', async () => {
      const f = await env.merchant();
      for (const path of ['/v1/payments', '/v1/payouts', '/V1/PAYMENTS/']) {
        const res = await f.client.post(path, { mode: 'ok' }, { idempotencyKey: false });
        expect(res.status, path).to.equal(400);
        expect(res.body.error.code).to.equal('idempotency-key-required');
      }
      const key = randomUUID();
      const first = await f.client.post('/v1/payments', { mode: 'ok' }, { idempotencyKey: key });
      const sameRoute = await f.client.post('/V1/Payments/', { mode: 'ok' }, { idempotencyKey: key });
      expect(sameRoute.text).to.equal(first.text);
      expect(sameRoute.headers.get('idempotent-replayed')).to.equal('true');
      const refund = await f.client.post('/v1/payments/pay_1/refund', { amount: 1 }, { idempotencyKey: false });
      expect(refund.status).to.equal(201);
      expect(await env.services.db('idempotency_keys').where({ merchant_id: f.merchant.id })).to.have.length(1);
    });

    it('frees an expired key, lets the same request take over a crashed one, and purges expired rows', async () => {
      const f = await env.merchant();
      const expiredKey = randomUUID();
      const first = await f.client.post('/v1/payouts', { mode: 'ok' }, { idempotencyKey: expiredKey });
      await env.services
        .db('idempotency_keys')
        .where({ key: expiredKey })
        .update({ expires_at: new Date(Date.now() - 1000) });
      const reused = await f.client.post('/v1/payouts', { mode: 'ok', day: 2 }, { idempotencyKey: expiredKey });
      expect(reused.status).to.equal(201);
      expect(reused.text).not.to.equal(first.text);

      // the transaction holding a key dies (its connection cut, as when its process is killed):
      // the key goes with it, and the request waiting for it takes it over
      const crashedKey = randomUUID();
      const g = gate(randomUUID());
      const gated = { mode: 'ok', gate: [...gates.keys()].pop() };
      const stuck = f.client.post('/v1/payouts', gated, { idempotencyKey: crashedKey });
      await g.entered;
      const takeover = f.client.post('/v1/payouts', gated, { idempotencyKey: crashedKey });
      await waitingOnLocks(env.services.db, 1);
      const { rows: cut } = await env.services.db.raw(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and state = 'idle in transaction'`,
      );
      expect(cut).to.have.length(1);
      // the takeover runs the route too (same body, same gate): open it for both
      g.open();
      const [a, b] = await Promise.all([stuck, takeover]);
      expect(b.status).to.equal(201);
      expect(b.headers.get('idempotent-replayed')).to.equal(null);
      // the request whose transaction died: 503, or (when the takeover committed first) its key's answer
      if (a.status === 201) {
        expect(a.text).to.equal(b.text);
        expect(a.headers.get('idempotent-replayed')).to.equal('true');
      } else {
        expect(a.status, a.text).to.equal(503);
        expect(a.body.error.code).to.equal('service-unavailable');
      }
      const row = await env.services.db('idempotency_keys').where({ key: crashedKey }).first();
      expect(row.status).to.equal('completed');
      expect(
        Buffer.from(row.response_body).toString(),
        'the request that took the key over stored its response',
      ).to.equal(b.text);

      const purged = await purgeExpiredIdempotencyKeys(env.services.db, env.services.clock.now());
      expect(purged).to.equal(0); // the expired one was reused, so nothing is expired
      await env.services
        .db('idempotency_keys')
        .where({ key: crashedKey })
        .update({ expires_at: new Date(Date.now() - 1) });
      expect(await purgeExpiredIdempotencyKeys(env.services.db, env.services.clock.now())).to.equal(1);
      expect(await env.services.db('idempotency_keys').where({ key: crashedKey })).to.have.length(0);
      expect(await env.services.db('idempotency_keys').where({ key: expiredKey })).to.have.length(1);
    });
  });
});
