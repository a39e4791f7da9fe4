import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { checkLedger } from '../../shared/ledger/check';
import { availableBalances } from '../../shared/ledger/balance';
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

/**
 * End to end over HTTP: the web app, the sandbox provider, provider-push and callback-reconciler
 * as real processes on this file's database and queues.
 */
const WINDOW_MS = 60_000;

describe('mobile-money payments end to end (sandbox provider, real workers)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let shop: MerchantFixture;
  let sandboxUrl: string;

  before(async () => {
    // the provider window is moved through with the test clock, never waited out
    env = await startTestEnv({
      SANDBOX_CALLBACK_DELAY_MS: '300',
      SANDBOX_PROVIDER_WINDOW_MS: String(WINDOW_MS),
      ASK_INTERVAL_MS: '250',
    });
    ({ url: sandboxUrl } = await startSandbox(env));
    await Promise.all([
      env.spawn('workers/provider-push/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl }),
      env.spawn('workers/callback-reconciler/index.ts', { SANDBOX_PROVIDER_URL: sandboxUrl }),
    ]);
    shop = await env.merchant({ scope: 'payments', merchant: { fees: { USD: { percent_bps: 250, fixed: 10 } } } });
  });
  after(async () => {
    expect(await checkLedger(env.services.db)).to.deep.equal([]);
    await env.close();
  });

  const events = (objectId: string) => env.services.db('events').where({ object_id: objectId }).orderBy('created');
  const history = async (id: string) =>
    (
      await env.services
        .db('payment_status_changes')
        .where({ payment_id: id })
        .orderBy('id')
        .select('from_status', 'to_status', 'reason')
    ).map((r) => `${r.from_status ?? '∅'}→${r.to_status} (${r.reason})`);

  describe('each sandbox number reaches its outcome', () => {
    const created: Record<string, any> = {};
    const final: Record<string, any> = {};
    const numbers = {
      success: '243990000001',
      insufficient: '243990000002',
      refused: '243990000003',
      silent: '243990000004',
      refundFails: '243990000005',
      other: '243811234567',
    };

    before(async () => {
      for (const [name, phone] of Object.entries(numbers))
        created[name] = await aPayment(shop.client, { phone: phone, metadata: { case: name } });
      const expected: Record<string, string> = {
        success: 'succeeded',
        insufficient: 'failed',
        refused: 'failed',
        refundFails: 'succeeded',
        other: 'succeeded',
      };
      await Promise.all(
        Object.entries(expected).map(
          async ([name, status]) => (final[name] = await waitForStatus(shop.client, created[name].id, status)),
        ),
      );
      // the silent one is still processing until its window is over: the clock moves past it, the sweep asks the provider
      expect((await shop.client.get(`/v1/payments/${created.silent.id}`)).body.status).to.equal('processing');
      env.clock.advance(WINDOW_MS);
      final.silent = await waitForStatus(shop.client, created.silent.id, 'cancelled');
    });

    for (const name of ['success', 'refundFails', 'other'] as const) {
      it(`${name}: succeeds, with the provider's reference, and credits amount_net once`, async () => {
        const p = final[name];
        const sandbox = await sandboxTransaction(sandboxUrl, 'vodacom', p.id);
        expect(sandbox).to.include({ status: 'succeeded' });
        expect(sandbox.sandbox).to.deep.equal({ requests: 1, callback_attempts: 1, callbacks_delivered: 1 });
        expect(p).to.include({
          status: 'succeeded',
          provider: 'vodacom-sandbox',
          provider_ref: sandbox.provider_ref,
          failure_code: null,
          failure_message: null,
          amount_net: 9_740,
        });
        expect(p.completed).to.be.a('number');
        expect(await history(p.id)).to.deep.equal([
          '∅→processing (created)',
          'processing→succeeded (provider-callback)',
        ]);
        const credits = await paymentCredits(env, p.id);
        expect(credits).to.have.length(1);
        const entries = await env.services
          .db('ledger_entries')
          .where({ transaction_id: credits[0].id })
          .select('amount');
        expect(entries.map((e) => e.amount).sort((a, b) => a - b)).to.deep.equal([-10_000, 260, 9_740]);
        const callbacks = await processedCallbacks(env, p.id, 1);
        expect(callbacks[0]).to.include({
          provider: 'vodacom-sandbox',
          verified: true,
          object_kind: 'payment',
          reported_status: 'succeeded',
          outcome: 'applied',
        });
      });
    }

    it('sends payment.succeeded with the event payment object, at the payment’s version', async () => {
      const p = final.success;
      const row = await env.services.db('payments').where({ id: p.id }).first();
      const evs = await events(p.id);
      expect(evs.map((e) => e.type)).to.deep.equal(['payment.succeeded']);
      const e = evs[0];
      expect(e).to.include({ merchant_id: shop.merchant.id, environment: 'test', object_version: row.version });
      expect(e.id).to.match(new RegExp(`^evt_${p.id.slice(4)}_${e.created}_[0-9a-f]+$`));
      expect(e.body).to.deep.equal({
        id: e.id,
        type: 'payment.succeeded',
        created: e.created,
        data: {
          object_version: row.version,
          object: {
            id: p.id,
            object: 'payment',
            status: 'succeeded',
            method: 'mobile_money',
            environment: 'test',
            currency: 'USD',
            amount_charged: 10_000,
            amount_net: 9_740,
            fee: 260,
            fee_bearer: 'merchant',
            amount_refunded: 0,
            reference: p.reference,
            payment_link: null,
            provider: 'vodacom-sandbox',
            provider_ref: p.provider_ref,
            failure_code: null,
            failure_message: null,
            customer: { msisdn: '243990000001', operator: 'vodacom', email: null, name: null },
            metadata: { case: 'success' },
            completed_at: p.completed,
          },
        },
      });
      // 1 at creation; provider_ref's first appearance (push recorded) and the success each add 1
      // (one change only when the callback is applied before the push is recorded)
      expect(row.version).to.be.oneOf([2, 3]);
    });

    it('insufficient funds and client refusal fail with their failure codes, payment.failed, no money', async () => {
      for (const [name, code] of [
        ['insufficient', 'insufficient-funds'],
        ['refused', 'client-refused'],
      ] as const) {
        const p = final[name];
        expect(p).to.include({ status: 'failed', failure_code: code });
        expect(p.failure_message).to.be.a('string').and.not.empty;
        expect(p.completed).to.be.a('number');
        expect(await paymentCredits(env, p.id)).to.have.length(0);
        const evs = await events(p.id);
        expect(evs.map((e) => e.type)).to.deep.equal(['payment.failed']);
        expect(evs[0].body.data.object).to.include({ status: 'failed', failure_code: code });
        expect(await history(p.id)).to.deep.equal(['∅→processing (created)', 'processing→failed (provider-callback)']);
      }
    });

    it('a payment the provider never answers is cancelled at the end of its window, with payment.cancelled', async () => {
      const p = final.silent;
      expect(p).to.include({ status: 'cancelled', failure_code: null, failure_message: null });
      expect(p.completed).to.be.a('number');
      expect(await sandboxTransaction(sandboxUrl, 'vodacom', p.id)).to.include({ status: 'expired' }); // the provider's own word: the client was never prompted to an end
      expect(await history(p.id)).to.deep.equal([
        '∅→processing (created)',
        'processing→cancelled (provider-window-expired)',
      ]);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.cancelled']);
      expect(await paymentCredits(env, p.id)).to.have.length(0);
      expect(await env.services.db('provider_callbacks').where({ object_id: p.id })).to.have.length(0);
    });

    it('credits the merchant’s available balance with the sum of amount_net of the succeeded payments only', async () => {
      expect(await availableBalances(env.services.db, shop.merchant.id, 'test')).to.deep.equal({
        USD: 3 * 9_740,
        CDF: 0,
      });
    });

    it('leaves no payment processing', async () => {
      const open = await env.services
        .db('payments')
        .whereIn(
          'id',
          Object.values(created).map((p) => p.id),
        )
        .where({ status: 'processing' });
      expect(open).to.have.length(0);
    });
  });

  describe('duplicate, late and stray callbacks', () => {
    it('a repeated success and a late failure change nothing and are recorded', async () => {
      const p = await waitForStatus(
        shop.client,
        (await aPayment(shop.client, { phone: '243990000001' })).id,
        'succeeded',
      );
      await processedCallbacks(env, p.id, 1);
      const before = await eventually(async () => {
        const row = await env.services.db('payments').where({ id: p.id }).first();
        return row.sent_at ? row : undefined;
      });
      const success = callbackBody({ external_id: p.id, status: 'succeeded', provider_ref: p.provider_ref });
      expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', success)).status).to.equal(200);
      expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', success)).status).to.equal(200);
      const late = callbackBody({ external_id: p.id, status: 'failed', failure_code: 'client-refused' });
      expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', late)).status).to.equal(200);
      const rows = await processedCallbacks(env, p.id, 4);
      expect(rows.map((r) => r.outcome)).to.deep.equal(['applied', 'duplicate', 'duplicate', 'ignored-late']);
      const after = await env.services.db('payments').where({ id: p.id }).first();
      expect(after).to.deep.equal(before);
      expect(await paymentCredits(env, p.id)).to.have.length(1);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.succeeded']);
    });

    it('out of order: a failure reported after the success is recorded and ignored (a success after a failure is a late success: operations-window)', async () => {
      // 243990000004: the sandbox never answers, so only our callbacks reach this payment
      const p = await aPayment(shop.client, { phone: '243990000004' });
      await eventually(async () => (await env.services.db('payments').where({ id: p.id }).first()).sent_at);
      expect(
        (await sendCallback(env.baseUrl, 'vodacom-sandbox', callbackBody({ external_id: p.id, status: 'succeeded' })))
          .status,
      ).to.equal(200);
      await processedCallbacks(env, p.id, 1);
      expect(
        (
          await sendCallback(
            env.baseUrl,
            'vodacom-sandbox',
            callbackBody({
              external_id: p.id,
              status: 'failed',
              failure_code: 'client-refused',
              failure_message: 'Wrong PIN',
            }),
          )
        ).status,
      ).to.equal(200);
      const rows = await processedCallbacks(env, p.id, 2);
      expect(rows.map((r) => r.outcome)).to.deep.equal(['applied', 'ignored-late']);
      const after = (await shop.client.get(`/v1/payments/${p.id}`)).body;
      expect(after).to.include({ status: 'succeeded', failure_code: null, failure_message: null });
      expect(await paymentCredits(env, p.id)).to.have.length(1);
      expect((await events(p.id)).map((e) => e.type)).to.deep.equal(['payment.succeeded']);
    });

    it('a callback for an unknown payment is stored and reported, not a 500', async () => {
      const ghost = `pay_${randomUUID()}`;
      const res = await sendCallback(
        env.baseUrl,
        'vodacom-sandbox',
        callbackBody({ external_id: ghost, status: 'succeeded' }),
      );
      expect(res.status).to.equal(200);
      const [row] = await processedCallbacks(env, ghost, 1);
      expect(row.outcome).to.equal('unknown-object');
      expect(await env.services.db('payments').where({ id: ghost })).to.have.length(0);
    });

    it('a callback from a provider that does not handle the payment changes nothing', async () => {
      const p = await aPayment(shop.client, { phone: '243990000004' });
      const res = await sendCallback(
        env.baseUrl,
        'airtel-sandbox',
        callbackBody({ external_id: p.id, status: 'succeeded' }),
      );
      expect(res.status).to.equal(200);
      const [row] = await processedCallbacks(env, p.id, 1);
      expect(row).to.include({ provider: 'airtel-sandbox', outcome: 'provider-mismatch' });
      expect((await shop.client.get(`/v1/payments/${p.id}`)).body.status).to.equal('processing');
    });
  });
});
