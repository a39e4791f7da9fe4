import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { checkLedger } from '../../shared/ledger/check';
import { QUEUES } from '../../shared/queues/names';
import {
  callbackBody,
  aPayment,
  paymentCredits,
  processedCallbacks,
  sandboxTransaction,
  sendCallback,
  startSandbox,
  waitForStatus,
} from '../helpers/money';

const row = (env: TestEnv, id: string) => env.services.db('payments').where({ id }).first();
const history = async (env: TestEnv, id: string) =>
  (
    await env.services
      .db('payment_status_changes')
      .where({ payment_id: id })
      .orderBy('id')
      .select('to_status', 'reason')
  ).map((r) => `${r.to_status} (${r.reason})`);

describe('provider-push', function () {
  this.timeout(60_000);

  describe('a worker killed in the middle of a push', () => {
    let env: TestEnv;
    let shop: MerchantFixture;
    let sandboxUrl: string;
    before(async () => {
      env = await startTestEnv({ PAYMENT_JOB_LOCK_MS: '1000' });
      // the sandbox holds its answer to the push long enough to kill the worker waiting for it,
      // and calls back late enough for the retried push to come first
      ({ url: sandboxUrl } = await startSandbox(env, {
        SANDBOX_PUSH_LATENCY_MS: '1500',
        SANDBOX_CALLBACK_DELAY_MS: '6000',
      }));
      await env.spawn('workers/callback-reconciler/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl });
      shop = await env.merchant({ scope: 'payments' });
    });
    after(async () => {
      expect(await checkLedger(env.services.db)).to.deep.equal([]);
      await env.close();
    });

    it('is retried by another worker with the same idempotency key: one prompt, one callback, one credit', async () => {
      const first = await env.spawn('workers/provider-push/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl });
      const p = await aPayment(shop.client, { phone: '243990000001' });
      // the provider has the push; the worker is still waiting for its answer
      await eventually(() => sandboxTransaction(sandboxUrl, 'vodacom', p.id));
      await first.kill();
      expect((await row(env, p.id)).sent_at, 'the killed worker recorded nothing').to.equal(null);

      await env.spawn('workers/provider-push/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl });
      // the new worker takes the stalled job once its lock (1 s) has expired; a loaded machine may take a while to start it
      const pushed = await eventually(async () => {
        const r = await row(env, p.id);
        return r.sent_at ? r : undefined;
      }, 30_000);
      const tx = await sandboxTransaction(sandboxUrl, 'vodacom', p.id);
      expect(tx.sandbox.requests, 'the push was sent again after the crash').to.equal(2);
      expect(pushed.provider_ref).to.equal(tx.provider_ref);

      const done = await waitForStatus(shop.client, p.id, 'succeeded');
      const after = await sandboxTransaction(sandboxUrl, 'vodacom', p.id);
      expect(after.sandbox).to.include({ callbacks_delivered: 1 });
      expect(done.provider_ref).to.equal(tx.provider_ref);
      expect(await paymentCredits(env, p.id)).to.have.length(1);
      expect(await processedCallbacks(env, p.id, 1)).to.have.length(1);
      expect((await env.services.db('events').where({ object_id: p.id })).map((e) => e.type)).to.deep.equal([
        'payment.succeeded',
      ]);
    });
  });

  describe('provider answers: refusal and timeout', () => {
    let env: TestEnv;
    let shop: MerchantFixture;
    let provider: http.Server;
    const seen: { msisdn: string; key: string | undefined; auth: string | undefined; body: any }[] = [];

    before(async () => {
      // an outside provider, played by a loopback server: refuses one number, hangs once on another
      const hung = new Set<string>();
      provider = http.createServer((req, res) => {
        let raw = '';
        req.on('data', (c) => (raw += c));
        req.on('end', () => {
          const body = JSON.parse(raw || '{}');
          seen.push({
            msisdn: body.msisdn,
            key: req.headers['idempotency-key'] as string,
            auth: req.headers.authorization,
            body,
          });
          const reply = (status: number, b: unknown) => {
            res.writeHead(status, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify(b));
          };
          if (body.msisdn === '243811111111')
            return reply(422, {
              error: { code: 'msisdn-not-registered', message: 'This number has no mobile-money account' },
            });
          if (body.msisdn === '243822222222' && !hung.has(body.external_id)) {
            hung.add(body.external_id);
            return; // never answers: the adapter's timeout fires
          }
          if (body.msisdn === '243833333333' && !hung.has(body.external_id)) {
            hung.add(body.external_id);
            return reply(503, { error: { code: 'busy', message: 'Try again later' } });
          }
          reply(201, { provider_ref: `MOCK-${body.external_id.slice(4, 12)}`, status: 'pending' });
        });
      });
      await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
      env = await startTestEnv();
      await env.spawn('workers/provider-push/index.ts', { SANDBOX_PROVIDER_URL: url, PROVIDER_TIMEOUT_MS: '300' });
      shop = await env.merchant({ scope: 'payments' });
    });
    after(async () => {
      await env.close();
      provider.closeAllConnections();
      await new Promise((r) => provider.close(r));
    });

    it('a permanent refusal fails the payment with the provider’s code, once, with payment.failed', async () => {
      const p = await aPayment(shop.client, { phone: '243811111111' });
      const failed = await waitForStatus(shop.client, p.id, 'failed');
      expect(failed).to.include({
        failure_code: 'msisdn-not-registered',
        failure_message: 'This number has no mobile-money account',
        provider_ref: null,
      });
      expect(await history(env, p.id)).to.deep.equal(['processing (created)', 'failed (provider-refused)']);
      expect((await env.services.db('events').where({ object_id: p.id })).map((e) => e.type)).to.deep.equal([
        'payment.failed',
      ]);
      expect(seen.filter((s) => s.key === p.id)).to.have.length(1);
    });

    it('a timeout is retried with backoff, with our payment id as the idempotency key each time', async () => {
      const p = await aPayment(shop.client, { phone: '243822222222' });
      // the new worker takes the stalled job once its lock (1 s) has expired; a loaded machine may take a while to start it
      const pushed = await eventually(async () => {
        const r = await row(env, p.id);
        return r.sent_at ? r : undefined;
      }, 30_000);
      expect(pushed).to.include({ status: 'processing', provider_ref: `MOCK-${p.id.slice(4, 12)}` });
      const calls = seen.filter((s) => s.body.external_id === p.id);
      expect(calls).to.have.length(2);
      for (const c of calls) {
        expect(c.key).to.equal(p.id);
        expect(c.auth).to.equal('Bearer sandbox-provider-key');
        expect(c.body).to.deep.include({
          amount: 10_000,
          currency: 'USD',
          msisdn: '243822222222',
          callback_url: `${env.baseUrl}/callbacks/vodacom-sandbox`,
        });
      }
    });

    it('a provider error (5xx) is retried too, and the payment stays open until the push is taken', async () => {
      const p = await aPayment(shop.client, { phone: '243833333333' });
      // the new worker takes the stalled job once its lock (1 s) has expired; a loaded machine may take a while to start it
      const pushed = await eventually(async () => {
        const r = await row(env, p.id);
        return r.sent_at ? r : undefined;
      }, 30_000);
      expect(pushed).to.include({ status: 'processing', failure_code: null });
      expect(seen.filter((s) => s.body.external_id === p.id)).to.have.length(2);
    });
  });

  describe('callbacks lost: the sweep asks the provider', () => {
    let env: TestEnv;
    let shop: MerchantFixture;
    let sandboxUrl: string;
    before(async () => {
      env = await startTestEnv({ ASK_INTERVAL_MS: '200' });
      ({ url: sandboxUrl } = await startSandbox(env, { SANDBOX_CALLBACK_DELAY_MS: '200' }));
      // the push tells the provider a callback URL nobody answers on, so every callback is lost
      await env.spawn('workers/provider-push/index.ts', {
        SANDBOX_PROVIDER_URL: sandboxUrl,
        BASE_URL: 'http://127.0.0.1:9',
      });
      await env.spawn('workers/callback-reconciler/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl });
      shop = await env.merchant({ scope: 'payments' });
    });
    after(async () => {
      expect(await checkLedger(env.services.db)).to.deep.equal([]);
      await env.close();
    });

    it('applies the provider’s outcome at the end of the window: success credited, failure with its code', async () => {
      const ok = await aPayment(shop.client, { phone: '243990000001' });
      const ko = await aPayment(shop.client, { phone: '243990000002' });
      // both with the provider, their callbacks lost: the window ends when the clock is moved past it
      await eventually(async () => (await row(env, ok.id)).sent_at && (await row(env, ko.id)).sent_at);
      expect((await row(env, ok.id)).status).to.equal('processing');
      env.clock.advance(env.config.providerWindowMs.test + 1);
      const succeeded = await waitForStatus(shop.client, ok.id, 'succeeded');
      const failed = await waitForStatus(shop.client, ko.id, 'failed');
      expect((await sandboxTransaction(sandboxUrl, 'vodacom', ok.id)).sandbox.callbacks_delivered).to.equal(0);
      expect(succeeded.provider_ref).to.be.a('string');
      expect(failed).to.include({ failure_code: 'insufficient-funds' });
      expect(await history(env, ok.id)).to.deep.equal(['processing (created)', 'succeeded (provider-asked)']);
      expect(await history(env, ko.id)).to.deep.equal(['processing (created)', 'failed (provider-asked)']);
      expect(await paymentCredits(env, ok.id)).to.have.length(1);
      expect((await env.services.db('events').where({ object_id: ok.id })).map((e) => e.type)).to.deep.equal([
        'payment.succeeded',
      ]);
      expect((await env.services.db('events').where({ object_id: ko.id })).map((e) => e.type)).to.deep.equal([
        'payment.failed',
      ]);
    });
  });

  describe('a stored callback whose job was lost', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv();
    });
    after(async () => {
      expect(await checkLedger(env.services.db)).to.deep.equal([]);
      await env.close();
    });

    it('is given a job again by the re-drive and applied once', async () => {
      const shop = await env.merchant({ scope: 'payments' });
      const p = await aPayment(shop.client, { phone: '243990000004' });
      expect(
        (
          await sendCallback(
            env.baseUrl,
            'vodacom-sandbox',
            callbackBody({ external_id: p.id, status: 'succeeded', provider_ref: 'R-lost' }),
          )
        ).status,
      ).to.equal(200);
      // Redis loses the job (flushed, or every attempt failed): only the inbox row remains
      await env.services.queues.get(QUEUES.callbackReconciler).obliterate({ force: true });
      await env.spawn('workers/callback-reconciler/index.ts', { ASK_INTERVAL_MS: '200' });
      await env.spawn('workers/outbox-relay/index.ts', { REDRIVE_INTERVAL_MS: '200', REDRIVE_GRACE_MS: '300' });
      const done = await waitForStatus(shop.client, p.id, 'succeeded');
      expect(done.provider_ref).to.equal('R-lost');
      const [row] = await processedCallbacks(env, p.id, 1);
      expect(row.outcome).to.equal('applied');
      expect(await paymentCredits(env, p.id)).to.have.length(1);
    });
  });
});
