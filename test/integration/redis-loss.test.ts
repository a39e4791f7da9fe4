import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { TestEnv } from '../helpers/env';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';
import { aMerchant, aPayment, startMoneyEnv, waitFor } from '../helpers/money';
import { paymentCredits, sandboxTransaction } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { ManualClock } from '../../shared/clock';
import { createContext, type ServiceContext } from '../../shared/context';
import { checkLedger } from '../../shared/ledger/check';
import { KINDS } from '../../shared/kindRegistry';
import { unsentOperations } from '../../shared/operations/send';
import { unappliedCallbacks } from '../../shared/providers/inbox';
import { redrive } from '../../shared/queues/redrive';
import { dueDeliveries } from '../../shared/webhooks/sweep';

/**
 * Redis loses its data (docs/decisions.md#faults-and-limits): a restart without persistence, a
 * failover or a flush. Postgres holds every open piece of work; the outbox-relay's re-drive gives
 * a job again to each one whose job is gone, and only to those. Each stage below leaves work
 * queued in Redis while the pool that would take it is not running, erases every key of this
 * file's queues (what FLUSHDB does to them; other files' keys are left alone), then starts the
 * pool: the work is done, once.
 */
describe('Redis data lost mid-flight: the re-drive carries every open piece of work on', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let rx: Receiver;
  let sandboxUrl: string;
  const pools = new Map<string, RunningProcess>();

  /**
   * Erases this file's queue keys (jobs, deduplication keys, schedulers, rate-limit counters) in one
   * atomic step, as FLUSHDB does: the relay and the running pools keep writing around it, so a
   * look-then-delete from here would race them. There must have been queued work to lose.
   */
  async function flushQueues() {
    const erase = `local n = 0
      for _, k in ipairs(redis.call('keys', ARGV[1])) do n = n + redis.call('del', k) end
      return n`;
    expect(Number(await env.services.redis.eval(erase, 0, `${env.config.queuePrefix}:*`))).to.be.above(0);
  }
  async function startPool(name: string) {
    pools.set(name, await env.spawn(`workers/${name}/index.ts`));
  }

  before(async () => {
    env = await startMoneyEnv(
      {
        REDRIVE_INTERVAL_MS: '200',
        REDRIVE_GRACE_MS: '500',
        ASK_INTERVAL_MS: '250',
        WEBHOOK_RETRY_DELAYS_MS: '100,100,100,100,100,100,100,100',
      },
      [],
    );
    sandboxUrl = env.config.connectors.sandbox.url;
    rx = await startReceiver();
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  describe('the re-drive adds a job only where it is missing', () => {
    let ctx: ServiceContext;
    let clock: ManualClock;
    const sources = [...Object.values(KINDS).map(unsentOperations), unappliedCallbacks, dueDeliveries];
    before(() => {
      clock = new ManualClock();
      ctx = createContext({ role: 'worker', name: 'redrive-test', config: env.config, clock });
    });
    after(async () => {
      await ctx.close();
      await flushQueues();
    });

    it('leaves work whose job is queued alone, gives lost work one job, and a second pass adds nothing', async () => {
      const { client } = await aMerchant(env);
      const payments = await Promise.all([1, 2, 3].map(() => aPayment(client)));
      // created a minute ago (their window still open on the clock this context reads)
      clock.advance(Date.now() - clock.now());
      await env.services
        .db('payments')
        .whereIn(
          'id',
          payments.map((p) => p.id),
        )
        .update({ created_at: new Date(clock.now() - 60_000) });
      // their push jobs wait in Redis (no provider-push pool runs): nothing to add
      expect(
        await redrive(
          { db: ctx.db, queues: ctx.queues, now: ctx.clock.now(), graceMs: ctx.config.redrive.graceMs, log: ctx.log },
          sources,
        ),
      ).to.deep.equal({});
      await flushQueues();
      expect(
        await redrive(
          { db: ctx.db, queues: ctx.queues, now: ctx.clock.now(), graceMs: ctx.config.redrive.graceMs, log: ctx.log },
          sources,
        ),
      ).to.deep.equal({ 'payment-send': 3 });
      expect(
        await redrive(
          { db: ctx.db, queues: ctx.queues, now: ctx.clock.now(), graceMs: ctx.config.redrive.graceMs, log: ctx.log },
          sources,
        ),
      ).to.deep.equal({});
      const waiting = await ctx.queues.get('provider-push').getJobs(['waiting']);
      expect(waiting.map((j) => j.data.paymentId).sort()).to.deep.equal(payments.map((p) => p.id).sort());
      // not yet older than the grace: left to the writer and the relay
      const fresh = await aPayment(client);
      await flushQueues();
      expect(
        await redrive(
          { db: ctx.db, queues: ctx.queues, now: ctx.clock.now(), graceMs: ctx.config.redrive.graceMs, log: ctx.log },
          sources,
        ),
      ).to.deep.equal({ 'payment-send': 3 });
      expect((await ctx.queues.get('provider-push').getJobs(['waiting'])).map((j) => j.data.paymentId)).not.to.include(
        fresh.id,
      );
      // cancel them at the provider's end: the next stage starts from a clean slate
      await env.services
        .db('payments')
        .whereIn(
          'id',
          [...payments, fresh].map((p) => p.id),
        )
        .update({ window_ends_at: new Date(Date.now() - 1000) });
    });
  });

  describe('every payment, refund, payout, callback and webhook delivery survives a flush at each stage', () => {
    const count = 8;
    let client: any;
    let payments: any[] = [];
    let refunds: any[] = [];
    let payouts: any[] = [];

    before(async () => {
      const shop = await aMerchant(env);
      client = shop.client;
      const hook = await env.admin('POST', '/admin/webhooks', {
        merchant_id: shop.merchant.id,
        url: `${rx.url}/hook`,
        events: ['payment.*', 'refund.*', 'payout.*'],
        environment: 'test',
      });
      expect(hook.status).to.equal(201);
      await startPool('outbox-relay');
    });

    it('pushes queued but lost: every client is prompted once', async () => {
      payments = await Promise.all(Array.from({ length: count }, () => aPayment(client)));
      await flushQueues();
      await startPool('provider-push');
      await eventually(
        async () =>
          (
            await env.services
              .db('payments')
              .whereIn(
                'id',
                payments.map((p) => p.id),
              )
              .whereNotNull('sent_at')
          ).length === count,
        20_000,
      );
      for (const p of payments)
        expect((await sandboxTransaction(sandboxUrl, 'vodacom', p.id)).sandbox.requests).to.equal(1);
    });

    it('callbacks stored but their jobs lost: every payment succeeds, credited once', async () => {
      // the sandbox calls back; no callback-reconciler runs, so the callbacks wait in the inbox with their jobs
      await eventually(
        async () =>
          (
            await env.services.db('provider_callbacks').whereIn(
              'object_id',
              payments.map((p) => p.id),
            )
          ).length === count,
        20_000,
      );
      await flushQueues();
      await startPool('callback-reconciler');
      for (const p of payments) {
        await waitFor(client, `/v1/payments/${p.id}`, (b) => b.status === 'succeeded', 20_000);
        expect(await paymentCredits(env, p.id)).to.have.length(1);
      }
    });

    it('refunds and payouts queued but lost: each is sent once and succeeds', async () => {
      refunds = await Promise.all(
        payments
          .slice(0, count / 2)
          .map(async (p) => (await client.post(`/v1/payments/${p.id}/refund`, { amount: 2_500 })).body),
      );
      payouts = await Promise.all(
        Array.from({ length: count / 2 }, async () => {
          const res = await client.post('/v1/payouts', {
            amount: 1_000,
            currency: 'USD',
            operator: 'airtel',
            phone: '243990000001',
            reference: randomUUID(),
          });
          expect(res.status, JSON.stringify(res.body)).to.equal(201);
          return res.body;
        }),
      );
      expect(refunds.every((r) => r.status === 'pending')).to.equal(true);
      await flushQueues();
      await startPool('refund');
      await startPool('payout');
      for (const r of refunds) {
        const p = payments.find((x) => x.id === r.transaction_id);
        await waitFor(client, `/v1/payments/${p.id}/refunds`, (l) => l.data[0]?.status === 'succeeded', 20_000);
      }
      for (const po of payouts) await waitFor(client, `/v1/payouts/${po.id}`, (b) => b.status === 'succeeded', 20_000);
      const sends = async (table: string, ids: string[]) =>
        env.services
          .db(`${table}_status_changes`)
          .whereIn(`${table}_id`, ids)
          .where({ reason: 'provider-accepted' })
          .count<{ n: string }[]>('* as n');
      expect(
        Number(
          (
            await sends(
              'payout',
              payouts.map((p) => p.id),
            )
          )[0].n,
        ),
      ).to.equal(payouts.length);
    });

    it('webhook deliveries due but their jobs lost: each event is delivered once', async () => {
      const objects = [...payments, ...refunds, ...payouts].map((o) => o.id);
      const events = await env.services.db('events').whereIn('object_id', objects).select('id', 'type');
      // at least a succeeded event for each payment, refund and payout
      expect(events.length).to.be.at.least(count * 2);
      await flushQueues();
      await startPool('webhook-sender');
      const got = await rx.waitFor('/hook', events.length, 30_000);
      const ids = got.map((r) => JSON.parse(r.raw.toString()).id);
      expect(new Set(ids).size).to.equal(ids.length);
      expect(ids.sort()).to.deep.equal(events.map((e) => e.id).sort());
      await eventually(
        async () =>
          (await env.services.db('webhook_deliveries').whereIn('event_id', ids).where({ status: 'succeeded' }))
            .length === ids.length,
      );
      // one attempt each: the re-drive's job was the only one
      const attempts = await env.services
        .db('webhook_attempts')
        .whereIn('delivery_id', env.services.db('webhook_deliveries').whereIn('event_id', ids).select('id'));
      expect(attempts).to.have.length(ids.length);
      expect(await checkLedger(env.services.db)).to.deep.equal([]);
    });
  });
});
