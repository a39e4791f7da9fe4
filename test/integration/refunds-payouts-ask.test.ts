import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { TestEnv } from '../helpers/env';
import { freePort } from '../../scripts/lib/ports';
import { eventually } from '../../scripts/lib/processes';
import { aMerchant, aSucceededPayment, balanceOf, startMoneyEnv, waitFor } from '../helpers/money';
import { checkLedger } from '../../shared/ledger/check';

/**
 * When the provider's callback never reaches us, the refund and payout pools' sweep asks the
 * provider once the provider window is over, and applies its answer; a payout whose send job was
 * lost is sent again. Here the refund and payout pools tell the sandbox a callback URL where
 * nothing listens, so every refund and payout callback is lost.
 */
describe('asking the provider about refunds and payouts whose callback is lost', () => {
  let env: TestEnv;
  const db = () => env.services.db;
  let lostCallbacks: Record<string, string>;

  before(async () => {
    env = await startMoneyEnv({}, ['workers/provider-push/index.ts', 'workers/callback-reconciler/index.ts']);
    lostCallbacks = {
      BASE_URL: `http://127.0.0.1:${await freePort()}`,
      ASK_INTERVAL_MS: '200',
    };
    await env.spawn('workers/refund/index.ts', lostCallbacks);
  });
  /** Refunds and payouts created by `fn` get a provider window of 300 ms (set by the web process at creation). */
  async function withShortWindow<T>(fn: () => Promise<T>): Promise<T> {
    const windows = env.config.providerWindowMs;
    const before = windows.test;
    windows.test = 300;
    try {
      return await fn();
    } finally {
      windows.test = before;
    }
  }

  after(async () => {
    expect(await checkLedger(db()), 'ledger:check after the ask file').to.deep.equal([]);
    await env.close();
  });

  it('a refund is decided by what the provider answers when asked: succeeded, or failed with the money back', async () => {
    const { client } = await aMerchant(env);
    const ok = await aSucceededPayment(client, { amount: 4_000 });
    const refused = await aSucceededPayment(client, { amount: 6_000, phone: '243990000005' });
    const a = (await withShortWindow(() => client.post(`/v1/payments/${ok.id}/refund`, {}))).body;
    const b = (await withShortWindow(() => client.post(`/v1/payments/${refused.id}/refund`, {}))).body;

    const doneA = await waitFor(client, `/v1/payments/${ok.id}/refunds`, (l) => l.data[0].status !== 'pending');
    const doneB = await waitFor(client, `/v1/payments/${refused.id}/refunds`, (l) => l.data[0].status !== 'pending');
    expect(doneA.data[0]).to.include({ id: a.id, status: 'succeeded' });
    expect(doneB.data[0]).to.include({ id: b.id, status: 'failed', failure_code: 'recipient-inactive' });
    for (const [id, to] of [
      [a.id, 'succeeded'],
      [b.id, 'failed'],
    ]) {
      const history = await db()('refund_status_changes')
        .where({ refund_id: id })
        .orderBy('id')
        .select('to_status', 'reason');
      expect(history).to.deep.equal([
        { to_status: 'pending', reason: 'created' },
        { to_status: to, reason: 'provider-asked' },
      ]);
    }
    expect(await db()('events').where({ object_id: b.id }).pluck('type')).to.deep.equal(['refund.failed']);
    expect(await balanceOf(client)).to.deep.equal({ available: { USD: 6_000, CDF: 0 }, pending: { USD: 0, CDF: 0 } });
    expect((await client.get(`/v1/payments/${refused.id}`)).body).to.include({
      status: 'succeeded',
      amount_refunded: 0,
    });
  });

  describe('payouts', () => {
    let client: any;
    before(async () => {
      ({ client } = await aMerchant(env));
      await aSucceededPayment(client, { amount: 10_000 });
    });
    const payout = (over: Record<string, unknown>): Promise<any> =>
      withShortWindow(() =>
        client.post('/v1/payouts', {
          amount: 1_000,
          currency: 'USD',
          operator: 'africell',
          phone: '243990000001',
          reference: randomUUID(),
          ...over,
        }),
      );

    it('a payout whose send job was lost is sent again, then decided by what the provider answers when asked', async () => {
      // created while no payout pool runs; its queued job is then lost
      const res = await payout({});
      expect(res.status).to.equal(201);
      await env.services.queues.get('payout').obliterate({ force: true });
      await env.spawn('workers/payout/index.ts', lostCallbacks);

      const done = await waitFor(client, `/v1/payouts/${res.body.id}`, (b) => b.status === 'succeeded');
      expect(done.completed).to.be.a('number');
      const history = await db()('payout_status_changes')
        .where({ payout_id: res.body.id })
        .orderBy('id')
        .select('to_status', 'reason');
      expect(history).to.deep.equal([
        { to_status: 'pending', reason: 'created' },
        { to_status: 'processing', reason: 'provider-accepted' },
        { to_status: 'succeeded', reason: 'provider-asked' },
      ]);
      const resent = await db()('outbox').whereRaw(`payload->>'payoutId' = ?`, [res.body.id]).count('* as n');
      expect(resent[0].n, 'the creation job, then the sweep’s').to.be.at.least(2);
    });

    it('a payout the provider never decides stays processing, its money in transit, however often it is asked', async () => {
      const res = await payout({ phone: '243990000004' });
      expect(res.status).to.equal(201);
      const first = await eventually(async () => {
        const row = await db()('payouts').where({ id: res.body.id }).first();
        return row.status === 'processing' && row.asked_at ? row.asked_at : undefined;
      });
      // asked again at a later sweep: still no outcome, so nothing changes
      await eventually(async () => {
        const row = await db()('payouts').where({ id: res.body.id }).first();
        return row.asked_at > first;
      });
      const row = await db()('payouts').where({ id: res.body.id }).first();
      expect(row).to.include({ status: 'processing', completed: null });
      const bal = await balanceOf(client);
      expect(bal.pending.USD).to.equal(1_000);
    });
  });
});
