import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { signRequest } from '../../shared/client/signing';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { send, sendRaw } from '../helpers/http';

/**
 * A few thousand random malformed merchant requests against the real app (production routes
 * only): headers, bodies, methods, paths and encodings, each request with at least one defect.
 * None may get a 5xx, and no row of any table may change. FUZZ_SEED replays a run.
 */

const STRUCTURED = 2400;
const RAW = 400;
const CONCURRENCY = 12;

function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
  const chance = (p: number) => next() < p;
  return { next, int, pick, bytes, chance };
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>) {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]);
    }),
  );
}

describe('merchant pipeline fuzz: malformed requests never get a 5xx nor change a row', function () {
  this.timeout(300_000);
  let env: TestEnv;
  let fixtures: MerchantFixture[];

  before(async () => {
    // the rate limit would answer most of the run with 429; it has its own tests
    env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '1000000' });
    fixtures = [
      await env.merchant({ scope: 'full' }),
      await env.merchant({ scope: 'payments' }),
      await env.merchant({ scope: 'read' }),
      await env.merchant({ scope: 'full', environment: 'live' }),
      await env.merchant({ scope: 'full', ip_allowlist: ['10.0.0.1'] }),
    ];
    const suspended = await env.merchant({ scope: 'full' });
    await env.admin('PATCH', `/admin/merchants/${suspended.merchant.id}`, { status: 'suspended' });
    fixtures.push(suspended);
    const revoked = await env.merchant({ scope: 'full' });
    await env.admin('POST', `/admin/credentials/${revoked.credential.id}/revoke`, { immediate: true });
    fixtures.push(revoked);
  });
  after(async () => env.close());

  /** Every row of every table, as one digest per table. */
  async function snapshot(): Promise<Record<string, string>> {
    const { rows } = await env.services.db.raw(
      `select tablename from pg_tables where schemaname = 'public' and tablename not like 'knex_migrations%' order by tablename`,
    );
    const out: Record<string, string> = {};
    for (const { tablename } of rows as { tablename: string }[]) {
      const r = await env.services.db.raw(
        `select count(*)::int as n, md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as h from ?? t`,
        [tablename],
      );
      out[tablename] = `${r.rows[0].n}:${r.rows[0].h}`;
    }
    return out;
  }

  it('answers each one with a 2xx-4xx and leaves the database as it was', async () => {
    const seed = Number(process.env.FUZZ_SEED) || Math.floor(Math.random() * 2 ** 31);
    const r = prng(seed);
    const before = await snapshot();
    const failures: string[] = [];
    const codes = new Map<string, number>();
    const now = () => Math.floor(Date.now() / 1000);

    const paths = [
      '/v1/payments',
      '/v1/payouts',
      '/V1/PAYMENTS/',
      '/v1/payments/',
      `/v1/payments/pay_${randomUUID()}`,
      `/v1/payments/pay_${randomUUID()}/refund`,
      `/v1/payments/pay_${randomUUID()}/refunds`,
      '/v1/payments/pay_x/refund',
      '/v1/balance',
      '/v1/events',
      '/v1/settlements',
      `/v1/payouts/po_${randomUUID()}`,
      '/v1/nowhere',
      '/v1',
      '/v1/payments?limit=-1',
      '/v1/payments?limit=100000&cursor=abc',
      '/v1/payments?status=%00&reference=%ff',
      '/v1/%00',
      '/v1/%ff%fe',
      '/v1/../admin/merchants',
      '/v1//payments',
      '/v1/payments/%E2%82%AC',
      `/v1/payments/${'a'.repeat(4000)}`,
      '/v1/payments;jsessionid=1',
      '/v1/payments/%2e%2e/payouts',
    ];
    const methods = ['GET', 'POST', 'POST', 'POST', 'PATCH', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'];
    const junkJson = () =>
      JSON.stringify(
        r.pick<unknown>([
          {},
          [],
          null,
          'text',
          1e308,
          { amount: -1, currency: 'EUR', method: 'cash' },
          { amount: 1.5, currency: 'USD', method: 'mobile_money', operator: 'nobody', phone: '123', reference: '' },
          { amount: '100', currency: 'CDF', method: 'card', reference: 'r', return_url: 'javascript:alert(1)' },
          { __proto__: { admin: true }, constructor: { prototype: { x: 1 } } },
          { metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'.repeat(600)])) },
          { amount: Number.MAX_SAFE_INTEGER + 2, currency: 'USD' },
          { immediate: true, status: 'succeeded', merchant_id: 'mer_x' },
        ]),
      );
    const bodies: (() => { body?: Buffer; defect?: string })[] = [
      () => ({}),
      () => ({ body: Buffer.from(junkJson()) }),
      () => ({ body: Buffer.from(junkJson()) }),
      () => ({ body: Buffer.from('{"amount": 100,'), defect: 'truncated json' }),
      () => ({ body: r.bytes(1 + r.int(2000)), defect: 'random bytes' }),
      () => ({ body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), defect: 'bad utf-8' }),
      () => ({ body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{}')]), defect: 'bom' }),
      () => ({ body: Buffer.from(JSON.stringify({ pad: 'x'.repeat(101 * 1024) })), defect: 'big body' }),
      () => ({ body: Buffer.from('['.repeat(20000) + ']'.repeat(20000)) }),
      () => ({ body: Buffer.from('['.repeat(20000)), defect: 'deep unbalanced' }),
      () => ({ body: Buffer.from('{"a":1}{"b":2}'), defect: 'two documents' }),
      () => ({ body: Buffer.from('\u0000\u0001'), defect: 'control bytes' }),
    ];

    interface Job {
      describe: string;
      run(): Promise<{ status: number; body?: any; method: string; headers?: Record<string, unknown> }>;
    }
    const jobs: Job[] = [];

    // fixtures 0, 1, 3 pass every merchant check; 2 (read scope), 4 (IP), 5 (suspended), 6 (revoked) do not
    const goodFixtures = [0, 1, 3];
    const badFixtures = [2, 4, 5, 6];
    const defectKinds = [
      'fixture',
      'auth',
      'timestamp',
      'signature',
      'content-type',
      'encoding',
      'body',
      'idempotency',
      'length',
      'route',
    ] as const;
    type Kind = (typeof defectKinds)[number];

    for (let i = 0; i < STRUCTURED; i++) {
      // a valid request, then one to three defects chosen on purpose
      const chosen = new Set<Kind>([r.pick(defectKinds)]);
      if (r.chance(0.3)) chosen.add(r.pick(defectKinds));
      if (r.chance(0.1)) chosen.add(r.pick(defectKinds));
      const defects: string[] = [];
      const f = fixtures[chosen.has('fixture') ? r.pick(badFixtures) : r.pick(goodFixtures)];
      if (chosen.has('fixture')) defects.push(`fixture ${fixtures.indexOf(f)}`);
      const method = r.pick(methods);
      const path = chosen.has('route') ? `/v1/fuzz-${r.int(1e6)}/${r.pick(['', 'x', '%zz', '..'])}` : r.pick(paths);
      if (chosen.has('route')) defects.push('unknown route');
      // a request whose defect is its key carries a body: an empty one is refused earlier (400 invalid-json on a money-moving POST)
      let body: Buffer | undefined = r.chance(0.8) || chosen.has('idempotency') ? Buffer.from(junkJson()) : undefined;
      if (chosen.has('body')) {
        const b = r.pick(bodies.slice(3))();
        body = b.body;
        defects.push(b.defect ?? 'deep balanced json');
      }
      let ts = String(now());
      const headers: Record<string, string> = { Authorization: `Bearer ${f.credential.api_key}` };
      if (chosen.has('auth')) {
        const a = r.int(3);
        if (a === 0) delete headers.Authorization;
        else if (a === 1) headers.Authorization = `Bearer svc_test_${r.bytes(24).toString('base64url')}`;
        else
          headers.Authorization = r.pick([
            'Bearer',
            'Basic Zm9vOmJhcg==',
            `Bearer ${f.credential.api_key}x`,
            `Bearer  ${'k'.repeat(5000)}`,
            'bearer svc_live_',
            `Bearer ${f.credential.api_key.replace('svc_test_', 'svc_live_')}`,
          ]);
        defects.push('auth');
      }
      if (chosen.has('timestamp')) {
        // ahead by 302 s or more: still past the bound once the server's clock has ticked on
        ts = r.pick([
          '',
          String(now() - 300 - r.int(100000)),
          String(now() + 302 + r.int(1000)),
          'abc',
          '1e9',
          `${now()}.0`,
          ` ${now()}`,
          '-1',
          String(Date.now()),
        ]);
        defects.push('timestamp');
      }
      if (ts !== '') headers['X-Timestamp'] = ts;
      const signedPath = path.split('?')[0];
      const good = signRequest(f.credential.secret, ts, method, signedPath, body ?? '');
      headers['X-Signature'] = good;
      if (chosen.has('signature')) {
        const sig = r.pick([
          'none',
          '',
          'ab',
          'Z'.repeat(64),
          r.bytes(32).toString('hex'),
          good.toUpperCase(),
          good.slice(1),
          signRequest(f.credential.secret, ts, method, signedPath, 'other'),
        ]);
        if (sig === 'none') delete headers['X-Signature'];
        else headers['X-Signature'] = sig;
        defects.push('signature');
      }
      // as the signing client does: a POST, PATCH or PUT is JSON even when empty (without the type: 415)
      if (body || ['POST', 'PATCH', 'PUT'].includes(method)) headers['Content-Type'] = 'application/json';
      if (chosen.has('content-type')) {
        const ct = r.pick([
          'none',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json; charset=latin1',
          'json',
          '*/*',
        ]);
        if (ct === 'none') delete headers['Content-Type'];
        else headers['Content-Type'] = ct;
        defects.push('content type');
      }
      if (chosen.has('encoding')) {
        headers['Content-Encoding'] = r.pick(['gzip', 'br', 'identity, gzip']);
        defects.push('encoding');
      }
      // as the signing client does: a key on the routes that require one (a refund's optional key
      // would store the answer to a well-formed refund of an unknown payment, its 404)
      if (/^\/v1\/(payments|payouts)\/?$/i.test(path))
        headers['Idempotency-Key'] = r.chance(0.2) ? randomUUID().toUpperCase() : randomUUID();
      if (chosen.has('idempotency')) {
        const k = r.pick(['none', 'abc', '6ba7b810-9dad-11d1-80b4-00c04fd430c8', randomUUID() + 'x', '']);
        if (k === 'none') delete headers['Idempotency-Key'];
        else headers['Idempotency-Key'] = k;
        defects.push('idempotency key');
      }
      if (chosen.has('length')) {
        headers['Content-Length'] = String(r.pick([500 * 1024 * 1024 + 1, 2 ** 40]));
        body = undefined;
        defects.push('huge content-length');
      }
      // noise that is no defect by itself
      if (r.chance(0.1)) headers['X-Forwarded-For'] = r.pick(['10.0.0.1', 'garbage', '1.2.3.4, 10.0.0.1', '::1']);
      if (r.chance(0.05)) headers['X-Request-Id'] = r.pick(['a'.repeat(500), '../../etc', '<script>']);
      if (r.chance(0.05) && !chosen.has('length')) headers['Transfer-Encoding'] = 'chunked';
      jobs.push({
        describe: `${method} ${path.slice(0, 80)} [${defects.join(', ')}]`,
        run: async () => ({ ...(await send(env.baseUrl, method, path, headers, body)), method }),
      });
    }

    // requests no HTTP client would write
    const key = fixtures[0].credential.api_key;
    const raws: string[] = [
      'FOO /v1/payments HTTP/1.1\r\nHost: x\r\n\r\n',
      'get /v1/payments HTTP/1.1\r\nHost: x\r\n\r\n',
      'POST /v1/payments HTTP/9.9\r\nHost: x\r\n\r\n',
      'POST /v1/payments\r\n\r\n',
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: -1\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 1e3\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 99999999999999999999999\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Timestamp: ${Math.floor(Date.now() / 1000)}\r\nContent-Length: 100\r\n\r\n{"short":`,
      `GET /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n folded: header\r\n\r\n`,
      `GET /v1/payments HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n`,
      `GET /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \u0000${key}\r\n\r\n`,
      `GET /v1/pa\u0000yments HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /v1/paymenté HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      `GET http://evil.example/v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      `GET * HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /v1/payments HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`,
      `GET /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Forwarded-For: ${'1.1.1.1, '.repeat(2000)}\r\n\r\n`,
      `GET /v1/payments HTTP/1.0\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      `GET /v1/payments HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Timestamp: ${Math.floor(Date.now() / 1000)}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GET /v1/balance HTTP/1.1\r\nHost: x\r\n\r\n`,
      '\r\n\r\n\r\n',
      '',
    ];
    for (let i = 0; i < RAW; i++) {
      let text = r.pick(raws);
      if (r.chance(0.5) && text.length > 4) {
        // flip, drop or duplicate some bytes
        const b = Buffer.from(text, 'utf8');
        for (let k = 0; k < 1 + r.int(4); k++) {
          const at = r.int(b.length);
          b[at] = r.int(256);
        }
        text = b.toString('latin1');
      }
      const bytes = Buffer.from(text, 'latin1');
      jobs.push({
        describe: `raw #${raws.indexOf(text)}: ${JSON.stringify(text.slice(0, 60))}`,
        run: async () => ({ ...(await sendRaw(env.baseUrl, bytes)), method: 'RAW' }),
      });
    }

    await pool(jobs, CONCURRENCY, async (job) => {
      try {
        const res = await job.run();
        // no X-Request-Id: Node's HTTP parser refused the bytes before any app code ran
        const byApp = res.method !== 'RAW' && res.headers?.['x-request-id'] !== undefined;
        const code =
          res.body?.error?.code ??
          (res.method === 'RAW' ? `raw-${res.status}` : byApp ? String(res.status) : `http-parser-${res.status}`);
        codes.set(code, (codes.get(code) ?? 0) + 1);
        if (res.status >= 500) failures.push(`${res.status} ${code} ← ${job.describe}`);
        else if (res.method !== 'RAW') {
          if (!byApp) {
            if (![400, 413, 431].includes(res.status))
              failures.push(`${res.status} from the HTTP parser ← ${job.describe}`);
          } else if (
            res.status >= 400 &&
            res.method !== 'HEAD' &&
            (typeof res.body?.error?.code !== 'string' || res.body?.error?.request_id !== res.headers?.['x-request-id'])
          ) {
            failures.push(`${res.status} without the error body ← ${job.describe}`);
          }
        }
      } catch (err) {
        failures.push(`${(err as Error).message} ← ${job.describe}`);
      }
    });

    expect(failures, `FUZZ_SEED=${seed}\n${failures.slice(0, 30).join('\n')}`).to.deep.equal([]);
    expect(await snapshot(), `FUZZ_SEED=${seed}: a row changed`).to.deep.equal(before);
    // the run reached every step, not just the first ones
    for (const code of [
      'payload-too-large',
      'auth-required',
      'api-key-invalid',
      'ip-not-allowed',
      'merchant-suspended',
      'timestamp-expired',
      'signature-invalid',
      'insufficient-scope',
      'unsupported-media-type',
      'invalid-json',
      'idempotency-key-required',
      'idempotency-key-invalid',
    ]) {
      expect(
        codes.get(code) ?? 0,
        `FUZZ_SEED=${seed}: no request got ${code}: ${JSON.stringify([...codes])}`,
      ).to.be.greaterThan(0);
    }
  });
});
