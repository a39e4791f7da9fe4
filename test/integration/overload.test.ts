import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { QUEUES } from '../../shared/queues/names';
import { readBacklog } from '../../shared/queues/backlog';
import { callbackBody, aPayment, mobilePayment, sendCallback } from '../helpers/money';

/**
 * Graceful overload (issue: 500 complete payments a second): while a queue behind the API holds
 * too many waiting jobs, or its oldest has waited too long, POST /v1/payments and POST
 * /v1/payouts answer 503 service-unavailable with Retry-After at once and create nothing; reads
 * and provider callbacks keep working; /metrics counts what was shed. No worker runs here, so the
 * push jobs of the payments created stay waiting: the service is driven past a low threshold.
 */

const aPayout = () => ({
  amount: 1_000,
  currency: 'USD',
  method: 'mobile_money',
  operator: 'vodacom',
  phone: '243990000001',
  reference: `po-${randomUUID()}`,
});

/** A POST /v1/payments whose body never ends: it stays in flight until its socket is closed. */
function hanging(env: TestEnv, apiKey: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const url = new URL(env.baseUrl);
    const socket = net.connect(Number(url.port), url.hostname, () => {
      // a fresh timestamp: the pipeline then waits for the body (its signature covers it)
      const ts = Math.floor(Date.now() / 1000);
      socket.write(
        `POST /v1/payments HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${apiKey}\r\nX-Timestamp: ${ts}\r\nX-Signature: v1=${'0'.repeat(64)}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"amount"`,
      );
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

async function shedCount(env: TestEnv, route: string, reason: string): Promise<number> {
  const res = await fetch(`${env.baseUrl}/metrics`, {
    headers: { Authorization: 'Bearer test-admin-token-0123456789' },
  });
  const text = await res.text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`http_requests_shed_total{route="${route}",reason="${reason}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('graceful overload', () => {
  describe('queue depth above OVERLOAD_MAX_WAITING', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv({
        OVERLOAD_MAX_WAITING: '3',
        OVERLOAD_MAX_WAIT_MS: '0',
        OVERLOAD_SAMPLE_MS: '50',
        OVERLOAD_RETRY_AFTER_S: '7',
      });
    });
    after(() => env.close());

    it('refuses new payments and payouts with 503 and Retry-After, creates nothing, keeps reads and callbacks working, counts what it shed, and takes work again once the queue drains', async () => {
      const { client } = await env.merchant({ scope: 'full' });
      const created = [];
      for (let i = 0; i < 4; i++) created.push(await aPayment(client, { phone: '243990000001' }));
      const backlog = await readBacklog(env.services.queues);
      expect(backlog.find((q) => q.queue === QUEUES.providerPush)!.waiting).to.equal(4);

      // the next sample sees 4 waiting push jobs > 3
      const refused = await eventually(async () => {
        const res = await client.post('/v1/payments', mobilePayment('243990000001'));
        if (res.status === 201) created.push(res.body);
        return res.status === 503 ? res : undefined;
      });
      expect(refused.body.error.code).to.equal('service-unavailable');
      expect(refused.headers.get('retry-after')).to.equal('7');
      const count = async () => Number((await env.services.db('payments').count('* as n'))[0].n);
      const before = await count();
      expect(before).to.equal(created.length);

      // a refused request changes nothing, its key included
      const key = randomUUID();
      const again = await client.post('/v1/payments', mobilePayment('243990000001'), {
        headers: { 'Idempotency-Key': key },
      });
      expect(again.status).to.equal(503);
      expect(again.body.error.code).to.equal('service-unavailable');
      expect(await count()).to.equal(before);
      expect(await env.services.db('idempotency_keys').where({ key }).first()).to.equal(undefined);

      const payout = await client.post('/v1/payouts', aPayout());
      expect(payout.status).to.equal(503);
      expect(payout.body.error.code).to.equal('service-unavailable');
      expect(payout.headers.get('retry-after')).to.equal('7');
      expect(Number((await env.services.db('payouts').count('* as n'))[0].n)).to.equal(0);

      // reads go on
      const read = await client.get(`/v1/payments/${created[0].id}`);
      expect(read.status).to.equal(200);
      expect(read.body.id).to.equal(created[0].id);
      expect((await client.get('/v1/payments')).status).to.equal(200);
      expect((await client.get('/v1/balance')).status).to.equal(200);
      // provider callbacks are stored (a provider may not send them again)
      const cb = await sendCallback(
        env.baseUrl,
        'vodacom-sandbox',
        callbackBody({ external_id: created[0].id, status: 'succeeded' }),
      );
      expect(cb.status).to.equal(200);
      expect(await env.services.db('provider_callbacks').where({ object_id: created[0].id }).first()).to.not.equal(
        undefined,
      );

      expect(await shedCount(env, '/v1/payments', 'queue-depth')).to.be.at.least(2);
      expect(await shedCount(env, '/v1/payouts', 'queue-depth')).to.equal(1);

      // the queue drains (as workers would take its jobs): creation is taken again
      await env.services.queues.get(QUEUES.providerPush).drain();
      const ok = await eventually(async () => {
        const res = await client.post('/v1/payments', mobilePayment('243990000001'));
        return res.status === 201 ? res : undefined;
      });
      expect(ok.body.status).to.equal('processing');
    });
  });

  describe('oldest waiting job older than OVERLOAD_MAX_WAIT_MS', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv({ OVERLOAD_MAX_WAITING: '0', OVERLOAD_MAX_WAIT_MS: '300', OVERLOAD_SAMPLE_MS: '50' });
    });
    after(() => env.close());

    it('refuses creation once a job has waited past the threshold, whatever the depth', async () => {
      const { client } = await env.merchant({ scope: 'full' });
      const first = await client.post('/v1/payments', mobilePayment('243990000001'));
      expect(first.status).to.equal(201); // one job, fresh: not overloaded
      const refused = await eventually(async () => {
        const res = await client.post('/v1/payments', mobilePayment('243990000001'));
        return res.status === 503 ? res : undefined;
      });
      expect(refused.body.error.code).to.equal('service-unavailable');
      expect(refused.headers.get('retry-after')).to.equal('5');
      const oldest = (await readBacklog(env.services.queues)).find((q) => q.queue === QUEUES.providerPush)!;
      expect(oldest.oldestWaitMs).to.be.above(300);
      expect(await shedCount(env, '/v1/payments', 'queue-wait')).to.be.at.least(1);
    });
  });

  describe('more merchant requests in flight than OVERLOAD_MAX_IN_FLIGHT', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv({ OVERLOAD_MAX_WAITING: '0', OVERLOAD_MAX_WAIT_MS: '0', OVERLOAD_MAX_IN_FLIGHT: '3' });
    });
    after(() => env.close());

    it('refuses creation at once while the process is that busy, keeps reads working, and takes work again once the requests end', async () => {
      const { client, credential } = await env.merchant({ scope: 'full' });
      // four requests that never end their body: the one that finds three in flight is shed at
      // once, and its answer shows the other three are in the server's hands
      const sockets = await Promise.all([1, 2, 3, 4].map(() => hanging(env, credential.api_key)));
      const shed = await Promise.race(
        sockets.map((socket) => new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())))),
      );
      expect(shed).to.match(/^HTTP\/1.1 503/);
      const before = Number((await env.services.db('payments').count('* as n'))[0].n);
      const refused = await client.post('/v1/payments', mobilePayment('243990000001'));
      expect(refused.status).to.equal(503);
      expect(refused.body.error.code).to.equal('service-unavailable');
      expect(refused.headers.get('retry-after')).to.equal('5');
      expect((await client.post('/v1/payouts', aPayout())).status).to.equal(503);
      expect(Number((await env.services.db('payments').count('* as n'))[0].n)).to.equal(before);
      expect((await client.get('/v1/payments')).status).to.equal(200);
      expect(await shedCount(env, '/v1/payments', 'in-flight')).to.equal(2);
      expect(await shedCount(env, '/v1/payouts', 'in-flight')).to.equal(1);

      for (const s of sockets) s.destroy();
      await eventually(async () => (await client.post('/v1/payments', mobilePayment('243990000001'))).status === 201);
    });
  });

  describe('an event loop later than OVERLOAD_MAX_LAG_MS', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv({
        OVERLOAD_MAX_WAITING: '0',
        OVERLOAD_MAX_WAIT_MS: '0',
        OVERLOAD_MAX_IN_FLIGHT: '0',
        OVERLOAD_MAX_LAG_MS: '50',
        OVERLOAD_SAMPLE_MS: '200',
      });
    });
    after(() => env.close());

    /** Keeps this process's event loop (the in-process web's) late: it runs 150 ms at a time for `ms`. */
    async function busyFor(ms: number) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        const until = Date.now() + 150;
        while (Date.now() < until) {
          // the web's loop is as late as a saturated one
        }
        await new Promise((r) => setImmediate(r));
      }
    }

    it('takes creation while the loop is late but few requests are in flight: a busy machine that keeps up', async () => {
      const { client } = await env.merchant({ scope: 'full' });
      // creation asks the loop's delay: its sampler runs from here on
      await aPayment(client, { phone: '243990000001' });
      const busy = busyFor(1200);
      await new Promise((r) => setTimeout(r, 400));
      const res = await client.post('/v1/payments', mobilePayment('243990000001'));
      await busy;
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(await shedCount(env, '/v1/payments', 'event-loop-lag')).to.equal(0);
    });

    it('refuses creation before the body is read once requests pile up behind a late loop, keeps GETs and provider callbacks working, and takes work again once the loop is on time', async () => {
      const { client, credential } = await env.merchant({ scope: 'full' });
      const p = await aPayment(client, { phone: '243990000001' });
      // 17 requests in flight (past the floor of 16 with no in-flight bound), each waiting for its body
      const waiting = await Promise.all(Array.from({ length: 17 }, () => hanging(env, credential.api_key)));
      // a round trip behind them: the web has read their heads and holds them, waiting for their bodies
      expect((await client.get(`/v1/payments/${p.id}`)).status).to.equal(200);
      // the loop stays late while the request is handled (the busy chunks yield between them)
      const busy = busyFor(1500);
      await new Promise((r) => setTimeout(r, 400));
      // a POST whose body never comes is answered at once: the refusal does not wait for the body
      const refused = await hanging(env, credential.api_key);
      const answer = new Promise<string>((r) => refused.once('data', (d) => r(d.toString())));
      const head = await Promise.race([
        answer,
        new Promise<string>((r) => setTimeout(() => r('no answer within 5 s'), 5000)),
      ]).finally(() => {
        for (const socket of [refused, ...waiting]) socket.destroy();
      });
      await busy;
      expect(head).to.match(/^HTTP\/1.1 503/);
      expect(head).to.match(/retry-after: 5/i);
      expect(head).to.include('service-unavailable');
      expect(await shedCount(env, '/v1/payments', 'event-loop-lag')).to.be.at.least(1);
      // reads and provider callbacks are never refused for it
      expect((await client.get(`/v1/payments/${p.id}`)).status).to.equal(200);
      const callback = await sendCallback(
        env.baseUrl,
        'vodacom-sandbox',
        callbackBody({ external_id: p.id, status: 'succeeded' }),
      );
      expect(callback.status).to.equal(200);
      // the loop on time again (the next sample): creation is taken again
      await eventually(
        async () => (await client.post('/v1/payments', mobilePayment('243990000001'))).status === 201,
        5000,
        100,
      );
    });
  });
});
