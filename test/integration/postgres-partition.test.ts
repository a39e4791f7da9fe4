import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../api/app';
import { createContext, type ServiceContext } from '../../shared/context';
import {
  callbackBody,
  sendCallback,
  startMoneyEnv,
  aMerchant,
  aSucceededPayment,
  mobilePayment,
} from '../helpers/money';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { startTcpProxy, type TcpProxy } from '../../scripts/chaos-proxy';
import { freePort } from '../../scripts/lib/ports';

/**
 * docs/decisions.md#bounded-waits: a Postgres partition (connections open, nothing
 * answered) is an outage, not a hang. A web process whose Postgres sits behind a TCP proxy that
 * the test turns into a black hole answers every request within 5 s: 503 service-unavailable
 * with Retry-After, and serves again once the partition ends.
 */
describe('a Postgres partition: every request answered within 5 s', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let proxy: TcpProxy;
  let web: ServiceContext;
  let server: Server;
  let base: string;
  let shop: MerchantFixture;
  let paid: { id: string };

  before(async () => {
    env = await startMoneyEnv();
    shop = await aMerchant(env);
    paid = await aSucceededPayment(shop.client, { amount: 50_000 });
    const db = new URL(env.config.databaseUrl);
    const proxyPort = await freePort();
    proxy = await startTcpProxy(proxyPort, { host: db.hostname, port: Number(db.port) || 5432 });
    db.port = String(proxyPort);
    web = createContext({
      role: 'web',
      name: 'web-partitioned',
      config: { ...env.config, databaseUrl: db.toString() },
    });
    server = await new Promise((resolve) => {
      const s = buildApp(web).listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server?.close();
    proxy?.close();
    await web?.close();
    await env?.close();
  });

  const client = () => env.client(shop.credential, base);
  const timed = async <T>(fn: () => Promise<T>) => {
    const started = Date.now();
    const result = await fn();
    return { result, ms: Date.now() - started };
  };

  it('answers payments, balance, refunds and provider callbacks 503 service-unavailable with Retry-After within 5 s, then serves again', async () => {
    // through the proxy, before the partition: it works (and the pool holds open connections)
    const before = await client().post('/v1/payments', mobilePayment('243990000001'), { idempotencyKey: randomUUID() });
    expect(before.status, before.text).to.equal(201);
    expect((await client().get('/v1/balance')).status).to.equal(200);

    // 8 s of silence: every request below is sent, and must be answered, within it
    const partition = proxy.partition(8000);
    const key = randomUUID();
    const payment = mobilePayment('243990000001', { reference: `partition-${randomUUID()}` });
    const requests = [
      () => client().post('/v1/payments', payment, { idempotencyKey: key }),
      () => client().get('/v1/balance'),
      () => client().post(`/v1/payments/${paid.id}/refund`, { amount: 100 }),
      () => client().get(`/v1/payments/${paid.id}`),
      async () => {
        const r = await sendCallback(
          base,
          'vodacom-sandbox',
          callbackBody({ external_id: paid.id, status: 'succeeded' }),
        );
        return { status: r.status, body: r.body, headers: new Headers() };
      },
    ];
    // more requests than the web's pool has connections: the later ones wait for one, also bounded
    const answers = await Promise.all([...requests, ...requests, ...requests].map((r) => timed(r)));
    for (const { result, ms } of answers) {
      expect(ms, JSON.stringify(result.body)).to.be.below(5_500);
      expect(result.status, JSON.stringify(result.body)).to.equal(503);
      expect(result.body.error.code).to.equal('service-unavailable');
    }
    for (const { result } of answers.slice(0, 4)) expect(result.headers.get('retry-after')).to.equal('5');

    await partition;
    // the pool drops the connections lost in the partition and opens new ones. The client retries
    // its 503 as a client does, with the same key and body: a statement that reached Postgres
    // before the silence may have committed (its answer replayed), or not (created now)
    const after = await client().post('/v1/payments', payment, { idempotencyKey: key });
    expect(after.status, after.text).to.equal(201);
    expect(await env.services.db('payments').where({ reference: payment.reference })).to.have.length(1);
    expect((await client().get('/v1/balance')).status).to.equal(200);
  });
});
