import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { V1_ROUTES } from '../../api/v1';
import { errorCodesOf } from '../../api/openapi/document';
import type { MerchantErrorCode } from '../../api/openapi/errors';
import type { RouteSpec } from '../../api/routeTable';
import { signRequest } from '../../shared/client/signing';
import { ContractChecker } from '../helpers/contract';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { send, type RawResponse } from '../helpers/http';
import { aMerchant, aSucceededPayment, mobilePayment, startMoneyEnv } from '../helpers/money';

/**
 * The OpenAPI document lists every error code a route answers, and no request-shaped code it
 * cannot answer. Each route of the table is driven, through real HTTP, by every driver below
 * (one per code of the pipeline, the signed methods and the Idempotency-Key); whatever the route
 * answers must be documented for it (status and code), and a driver's code is documented for a
 * route exactly when the route answered it. The codes of a route's own rules (reference-conflict,
 * insufficient-balance...) are driven by their features' tests, whose checked clients prove them
 * documented (test/helpers/contract.ts); NOT_DRIVEN names the few that no driver here provokes.
 */

/** Documented codes no driver of this file provokes, and where they are proved. */
const NOT_DRIVEN: Partial<Record<MerchantErrorCode, string>> = {
  'service-unavailable': 'postgres-down.test.ts, redis-down.test.ts',
  'idempotency-in-progress': 'pipeline.test.ts (a request waiting on its key)',
  'invalid-body': 'pipeline.test.ts (a body that cannot be read)',
  'not-found': 'an unknown object: driven here for routes with an id; the others answer it for an unknown route',
};

interface Fixtures {
  shop: MerchantFixture;
  readOnly: MerchantFixture;
  suspended: MerchantFixture;
  fenced: MerchantFixture;
  limited: MerchantFixture;
  /** The rate limiter's count, as the pipeline keeps it (api/pipeline/rateLimit.ts). */
  limiter: RateLimiterRedis;
  /** Values of the path parameters: objects of `shop`. */
  params: Record<string, string>;
}

interface Req {
  credential?: { api_key: string; secret: string } | null;
  /** The Authorization header as sent (overrides the credential's). */
  authorization?: string;
  timestamp?: number;
  /** X-Signature as sent (default: the valid one). */
  signature?: string;
  key?: string;
  /** The body as sent (signed methods; default: the route's valid body). */
  body?: string;
  contentType?: string | null;
  query?: string;
  headers?: Record<string, string>;
  /** Path parameters instead of the fixtures'. */
  params?: Record<string, string>;
}

const nowS = () => Math.floor(Date.now() / 1000);

describe('error codes: every code a route answers is in the OpenAPI document', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let f: Fixtures;
  const checker = new ContractChecker();

  /** The route's path with `params` (by `<first segment>:<name>`): the objects of `shop`. */
  const pathOf = (route: RouteSpec, params: Record<string, string>) =>
    `/v1${route.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => params[`${route.path.split('/')[1]}:${name}`])}`;

  let refunds = 0;
  /** A valid body for the route (a new reference each time: a body the route accepts once more). */
  function validBody(route: RouteSpec): string {
    if (route.method === 'GET') return '';
    if (route.path === '/payments') return JSON.stringify(mobilePayment('243990000001', { amount: 1_000 }));
    if (route.path === '/payouts')
      return JSON.stringify({
        amount: 100,
        currency: 'USD',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `po-${randomUUID()}`,
      });
    // another amount each time: the same key with this body is another request (idempotency-conflict)
    if (route.path === '/payments/:id/refund') return JSON.stringify({ amount: 100 + (refunds++ % 50) });
    if (route.path === '/payment_links')
      return JSON.stringify({ amount: 100 + (refunds++ % 50), currency: 'USD', description: 'Robe wax' });
    return '{}';
  }

  /** One request to `route`, as `req` says; returns the answer and the same bytes sent again. */
  async function call(
    route: RouteSpec,
    req: Req = {},
  ): Promise<{ res: RawResponse; again: (headers?: Record<string, string | undefined>) => Promise<RawResponse> }> {
    const credential = req.credential === undefined ? f.shop.credential : req.credential;
    const path = pathOf(route, req.params ?? f.params) + (req.query ?? '');
    const signedMethod = route.method !== 'GET';
    const body = signedMethod ? (req.body ?? validBody(route)) : undefined;
    const ts = String(req.timestamp ?? nowS());
    const headers: Record<string, string> = {
      ...(req.authorization !== undefined
        ? { Authorization: req.authorization }
        : credential
          ? { Authorization: `Bearer ${credential.api_key}` }
          : {}),
      ...(signedMethod && credential
        ? {
            'X-Timestamp': ts,
            'X-Signature':
              req.signature ?? signRequest(credential.secret, ts, route.method, path.split('?')[0], body ?? ''),
          }
        : {}),
      ...(signedMethod && req.contentType !== null ? { 'Content-Type': req.contentType ?? 'application/json' } : {}),
      ...(req.key ? { 'Idempotency-Key': req.key } : {}),
      ...req.headers,
    };
    const go = (h: Record<string, string>) => send(env.baseUrl, route.method, path, h, body);
    return {
      res: await go(headers),
      again: (changes = {}) => {
        const next = { ...headers };
        for (const [k, v] of Object.entries(changes))
          if (v === undefined) delete next[k];
          else next[k] = v;
        return go(next);
      },
    };
  }

  const keyed = (route: RouteSpec) => (route.idempotencyKey ? randomUUID() : undefined);

  /** Each driver sends what provokes its code on a route that can answer it. */
  const DRIVERS: Record<string, (route: RouteSpec) => Promise<RawResponse>> = {
    'auth-required': async (route) => (await call(route, { credential: null })).res,
    'api-key-invalid': async (route) => (await call(route, { authorization: `Bearer svc_test_${'0'.repeat(32)}` })).res,
    'ip-not-allowed': async (route) => (await call(route, { credential: f.fenced.credential, key: keyed(route) })).res,
    'merchant-suspended': async (route) =>
      (await call(route, { credential: f.suspended.credential, key: keyed(route) })).res,
    'rate-limit-exceeded': async (route) => {
      // the key's count is at the limit (for a new window): its next request is over it
      await f.limiter.set(f.limited.credential.id, env.config.rateLimitPerMinute, 60);
      return (await call(route, { credential: f.limited.credential, key: keyed(route) })).res;
    },
    'timestamp-expired': async (route) => (await call(route, { timestamp: nowS() - 400, key: keyed(route) })).res,
    'signature-invalid': async (route) => (await call(route, { signature: '0'.repeat(64), key: keyed(route) })).res,
    'insufficient-scope': async (route) =>
      (await call(route, { credential: f.readOnly.credential, key: keyed(route) })).res,
    'payload-too-large': async (route) =>
      (await call(route, { key: keyed(route), body: `{"x":"${'a'.repeat(1_100_000)}"}` })).res,
    'unsupported-media-type': async (route) =>
      (await call(route, { key: keyed(route), contentType: 'text/plain' })).res,
    'invalid-json': async (route) => (await call(route, { key: keyed(route), body: '{' })).res,
    'validation-failed': async (route) =>
      route.method === 'GET'
        ? (await call(route, { query: '?limit=nonsense' })).res
        : (await call(route, { key: keyed(route), body: '{"unknown_field":1}' })).res,
    'idempotency-key-required': async (route) => (await call(route)).res,
    'idempotency-key-invalid': async (route) => (await call(route, { key: 'not-a-uuid' })).res,
    'idempotency-conflict': async (route) => {
      const key = randomUUID();
      await call(route, { key });
      return (await call(route, { key })).res; // a valid body again, but another one (a new reference)
    },
    'request-replayed': async (route) => {
      const first = await call(route, { key: keyed(route) });
      return first.again(route.idempotencyKey ? { 'Idempotency-Key': randomUUID() } : {});
    },
    maintenance: async (route) => {
      await env.admin('PUT', '/admin/maintenance', { enabled: true, retry_after: 5 });
      try {
        return (await call(route, { key: keyed(route) })).res;
      } finally {
        await env.admin('PUT', '/admin/maintenance', { enabled: false });
      }
    },
  };

  before(async () => {
    env = await startMoneyEnv({}, ['workers/provider-push/index.ts', 'workers/callback-reconciler/index.ts']);
    const shop = await aMerchant(env);
    const payment = await aSucceededPayment(shop.client, { amount: 100_000 });
    const events = await shop.client.get('/v1/events?limit=1');
    const link = await shop.client.post('/v1/payment_links', {
      amount: 2_500,
      currency: 'USD',
      description: 'Robe wax',
    });
    expect(events.status).to.equal(200);
    const suspended = await aMerchant(env);
    expect(
      (await env.admin('PATCH', `/admin/merchants/${suspended.merchant.id}`, { status: 'suspended' })).status,
    ).to.equal(200);
    f = {
      shop,
      readOnly: await aMerchant(env, {}, 'read'),
      suspended,
      fenced: await env.merchant({ ip_allowlist: ['10.9.9.9'] }),
      limited: await aMerchant(env),
      limiter: new RateLimiterRedis({
        storeClient: env.services.redis,
        keyPrefix: `${env.config.queuePrefix}:ratelimit`,
        points: env.config.rateLimitPerMinute,
        duration: 60,
      }),
      params: {
        'payments:id': payment.id,
        'events:id': events.body.data[0].id,
        'payouts:id': `po_${randomUUID()}`,
        'payment_links:id': link.body.id,
        'settlements:id': `stl_${randomUUID()}`,
        'phone-numbers:number': '243990000001',
      },
    };
  });
  after(async () => env?.close());

  for (const route of V1_ROUTES) {
    const name = `${route.method} /v1${route.path}`;
    it(`${name}: answers only documented codes, and every driven code the document lists`, async () => {
      const documented = new Set([...errorCodesOf(route).values()].flat());
      const wrong: string[] = [];
      const answered = new Set<string>();
      for (const [code, drive] of Object.entries(DRIVERS)) {
        const res = await drive(route);
        const got = res.body?.error?.code as string | undefined;
        if (got) answered.add(got);
        const problems = checker.problems({
          method: route.method,
          path: pathOf(route, f.params),
          status: res.status,
          headers: new Headers(res.headers as Record<string, string>),
          body: res.body,
          text: res.text,
        });
        wrong.push(...problems.map((p) => `driving ${code}: ${p}`));
        if (documented.has(code as MerchantErrorCode) && got !== code)
          wrong.push(`driving ${code}: the document lists it, but the route answered ${res.status} ${got ?? ''}`);
      }
      // an object that does not exist (a route without an id answers not-found only for an unknown route)
      if (route.path.includes(':id')) {
        const unknown = Object.fromEntries(
          Object.entries(f.params).map(([k, v]) => [k, v.replace(/^([a-z]+_).*$/, `$1${randomUUID()}`)]),
        );
        const res = (await call(route, { params: unknown, key: keyed(route) })).res;
        const got = res.body?.error?.code as string | undefined;
        if (got) answered.add(got);
        const problems = checker.problems({
          method: route.method,
          path: pathOf(route, unknown),
          status: res.status,
          headers: new Headers(res.headers as Record<string, string>),
          body: res.body,
          text: res.text,
        });
        wrong.push(...problems.map((p) => `an unknown id: ${p}`));
        if (got !== 'not-found') wrong.push(`an unknown id answered ${res.status} ${got ?? ''}`);
      }
      const undriven = [...documented].filter(
        (c) => !(c in DRIVERS) && !answered.has(c) && !(c in NOT_DRIVEN) && !(route.errors ?? []).includes(c),
      );
      expect(undriven, `${name}: documented, but driven neither here nor by a named test`).to.deep.equal([]);
      expect(wrong, name).to.deep.equal([]);
    });
  }
});
