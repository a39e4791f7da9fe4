import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { PaymentsApi } from '../../shared/client/sdk';
import {
  ConnectionError,
  InvalidRequestError,
  PaymentsApiError,
  RateLimitError,
  ServiceUnavailableError,
  ConflictError,
} from '../../shared/client/errors';
import { signRequest } from '../../shared/client/signing';

/**
 * The SDK's retries against a real HTTP server on loopback that answers what a test scripts:
 * 429 / 503 / 409 idempotency-in-progress with Retry-After, then success. Waits are recorded by
 * an injected sleep (no real waiting); every attempt must be signed anew, with the same body
 * bytes and the same Idempotency-Key.
 */

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = { status: number; headers?: Record<string, string>; body?: unknown } | 'drop';

const SECRET = 'sk_test_retry_secret';
const API_KEY = 'svc_test_retry';

describe('SDK retries (loopback server)', () => {
  let server: Server;
  let baseUrl: string;
  let script: Answer[] = [];
  let seen: Seen[] = [];

  before(async () => {
    server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          path: req.url!,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const answer = script.shift() ?? {
          status: 500,
          body: { error: { code: 'internal-error', message: 'script exhausted', request_id: 'req_x' } },
        };
        if (answer === 'drop') return req.socket.destroy();
        res.writeHead(answer.status, {
          'Content-Type': 'application/json',
          'X-Request-Id': `req_${seen.length}`,
          ...answer.headers,
        });
        res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => {
    script = [];
    seen = [];
  });

  function client(over: Partial<ConstructorParameters<typeof PaymentsApi>[0]> = {}) {
    const waits: number[] = [];
    const api = new PaymentsApi({
      baseUrl,
      apiKey: API_KEY,
      secret: SECRET,
      sleep: async (ms) => void waits.push(ms),
      ...over,
    });
    return { api, waits };
  }

  const err = (status: number, code: string, retryAfter?: string) => ({
    status,
    headers: retryAfter ? { 'Retry-After': retryAfter } : undefined,
    body: { error: { code, message: code, request_id: `req_${code}` } },
  });

  const PAYMENT = {
    amount: 2500,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: '243990000001',
    reference: 'order-1',
  } as const;

  it('retries 429, 503 and 409 idempotency-in-progress after Retry-After, with the same key and body, signed anew each time', async () => {
    script = [
      err(429, 'rate-limit-exceeded', '2'),
      err(503, 'maintenance', '1'),
      err(409, 'idempotency-in-progress', '1'),
      { status: 201, body: { id: 'pay_1' } },
    ];
    const { api, waits } = client();
    const payment = await api.payments.create(PAYMENT);
    expect(payment).to.deep.equal({ id: 'pay_1' });
    expect(waits).to.deep.equal([2000, 1000, 1000]);
    expect(seen).to.have.length(4);
    const keys = new Set(seen.map((s) => s.headers['idempotency-key']));
    expect(keys.size).to.equal(1);
    expect([...keys][0]).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (const s of seen) {
      expect(s.body).to.equal(JSON.stringify(PAYMENT));
      expect(s.headers.authorization).to.equal(`Bearer ${API_KEY}`);
      const ts = String(s.headers['x-timestamp']);
      expect(s.headers['x-signature']).to.equal(signRequest(SECRET, ts, 'POST', '/v1/payments', s.body));
    }
  });

  it('keeps a key the caller gives across retries', async () => {
    script = [err(503, 'service-unavailable', '5'), { status: 201, body: { id: 'po_1' } }];
    const { api, waits } = client();
    const key = '6f1c3f9e-6a0b-4c8e-9d4f-2b7a1e0c5d3a';
    await api.payouts.create({ ...PAYMENT, method: 'mobile_money' }, { idempotencyKey: key });
    expect(seen.map((s) => s.headers['idempotency-key'])).to.deep.equal([key, key]);
    expect(waits).to.deep.equal([5000]);
  });

  it('backs off exponentially when there is no Retry-After, then gives up with the typed error after maxRetries', async () => {
    script = [
      err(503, 'service-unavailable'),
      err(503, 'service-unavailable'),
      err(503, 'service-unavailable'),
      err(503, 'service-unavailable'),
    ];
    const { api, waits } = client({ baseDelayMs: 100 });
    const e = await api.balance.retrieve().then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).to.be.instanceOf(ServiceUnavailableError).and.instanceOf(PaymentsApiError);
    expect(e).to.include({
      status: 503,
      code: 'service-unavailable',
      requestId: 'req_service-unavailable',
      retryAfter: null,
    });
    expect(seen).to.have.length(4); // the first attempt and 3 retries
    expect(waits).to.have.length(3);
    [100, 200, 400].forEach((full, i) => expect(waits[i]).to.be.within(full / 2, full));
  });

  it('does not wait longer than maxDelayMs: a Retry-After beyond it throws at once, carrying retryAfter', async () => {
    script = [err(429, 'rate-limit-exceeded', '120')];
    const { api, waits } = client({ maxDelayMs: 30_000 });
    const e = await api.payments.retrieve('pay_x').catch((x: unknown) => x);
    expect(e).to.be.instanceOf(RateLimitError);
    expect(e).to.include({ status: 429, code: 'rate-limit-exceeded', retryAfter: 120 });
    expect(seen).to.have.length(1);
    expect(waits).to.deep.equal([]);
  });

  it('never retries another 4xx: the typed error carries code, param and request id', async () => {
    script = [
      {
        status: 400,
        body: {
          error: { code: 'validation-failed', message: 'amount must be >= 1', param: 'amount', request_id: 'req_abc' },
        },
      },
    ];
    const { api } = client();
    const e = await api.payments.create({ ...PAYMENT, amount: 0 }).catch((x: unknown) => x);
    expect(e).to.be.instanceOf(InvalidRequestError);
    expect(e).to.include({ status: 400, code: 'validation-failed', param: 'amount', requestId: 'req_abc' });
    expect((e as Error).message)
      .to.include('validation-failed')
      .and.include('req_abc');
    script = [err(409, 'idempotency-conflict', '1')];
    expect(await api.payments.create(PAYMENT).catch((x: unknown) => x)).to.be.instanceOf(ConflictError);
    expect(seen).to.have.length(2);
  });

  it('retries a request that got no answer, then reports a ConnectionError when none comes', async () => {
    script = ['drop', { status: 200, body: { object: 'balance' } }];
    const { api, waits } = client({ baseDelayMs: 10 });
    expect(await api.balance.retrieve()).to.deep.equal({ object: 'balance' });
    expect(waits).to.have.length(1);
    script = ['drop', 'drop'];
    const e = await client({ maxRetries: 1, baseDelayMs: 10 })
      .api.balance.retrieve()
      .catch((x: unknown) => x);
    expect(e).to.be.instanceOf(ConnectionError);
  });

  it('turns retrying off with maxRetries 0', async () => {
    script = [err(429, 'rate-limit-exceeded', '1')];
    const e = await client({ maxRetries: 0 })
      .api.balance.retrieve()
      .catch((x: unknown) => x);
    expect(e).to.be.instanceOf(RateLimitError);
    expect(seen).to.have.length(1);
  });

  it('pages through a list, passing next_cursor as cursor until has_more is false', async () => {
    const item = (n: number) => ({ id: `pay_${n}` });
    script = [
      { status: 200, body: { object: 'list', data: [item(5), item(4)], has_more: true, next_cursor: '100.pay_4' } },
      { status: 200, body: { object: 'list', data: [item(3), item(2)], has_more: true, next_cursor: '90.pay_2' } },
      { status: 200, body: { object: 'list', data: [item(1)], has_more: false, next_cursor: null } },
    ];
    const { api } = client();
    const ids: string[] = [];
    for await (const p of api.payments.list({ status: 'succeeded', limit: 2 })) ids.push(p.id);
    expect(ids).to.deep.equal(['pay_5', 'pay_4', 'pay_3', 'pay_2', 'pay_1']);
    expect(seen.map((s) => s.path)).to.deep.equal([
      '/v1/payments?status=succeeded&limit=2',
      '/v1/payments?status=succeeded&limit=2&cursor=100.pay_4',
      '/v1/payments?status=succeeded&limit=2&cursor=90.pay_2',
    ]);
  });
});
