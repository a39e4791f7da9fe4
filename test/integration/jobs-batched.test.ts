import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { aMerchant, aPayment, sandboxTransaction, startSandbox } from '../helpers/money';
import { freePort } from '../../scripts/lib/ports';
import { eventually } from '../../scripts/lib/processes';
import { outboxJobId, outboxMessage } from '../../shared/queues/outbox';
import { BATCH_MAX, batchJobId } from '../../shared/queues/batch';
import { QUEUES, queueKeyPrefix } from '../../shared/queues/names';

/**
 * Jobs published together travel as one BullMQ job (at most BATCH_MAX, shared/queues/batch.ts):
 * the batch holds their payloads, the worker runs each as the job it stands for, and one that
 * fails or must wait gets a job of its own.
 */
describe('jobs published together travel as one batch job', function () {
  this.timeout(60_000);

  const pushes = (n: number) =>
    Array.from({ length: n }, () =>
      outboxMessage(QUEUES.providerPush, 'push', { paymentId: `pay_${randomUUID()}`, requestId: 'req_1' }),
    );
  /** Publishes as a writer does after commit (the registry's connection up first: publish leaves a cold one to the relay). */
  const publish = async (env: TestEnv, msgs: ReturnType<typeof outboxMessage>[]) => {
    await env.services.queues.ready(QUEUES.providerPush);
    await env.services.outbox.publish(msgs);
  };
  const jobsOf = async (env: TestEnv) => {
    const jobs = await env.services.queues.get(QUEUES.providerPush).getJobs(['waiting', 'delayed', 'prioritized']);
    return jobs
      .map((j) => ({ id: j.id, data: j.data, delayed: j.delay > 0 }))
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
  };

  describe('publication', () => {
    it(`pushes published together go in batches of at most ${BATCH_MAX}; a batch of one and a delayed job stay single`, async () => {
      const env = await startTestEnv();
      try {
        const now = pushes(2 * BATCH_MAX + 1);
        const delayed = outboxMessage(QUEUES.providerPush, 'push', { paymentId: `pay_${randomUUID()}` }, 60_000);
        // a payload naming no one piece of work (callbacks stored together) is never put in a batch
        const callbacks = outboxMessage(QUEUES.callbackReconciler, 'apply-callback', {
          callbackIds: `${randomUUID()},${randomUUID()}`,
          kind: 'payment',
        });
        const lone = outboxMessage(QUEUES.callbackReconciler, 'apply-callback', {
          callbackId: randomUUID(),
          kind: 'payment',
        });
        await publish(env, [...now, delayed, callbacks, lone]);
        const expected = [
          { id: batchJobId(now[0].id), data: { batch: now.slice(0, BATCH_MAX).map((m) => m.payload) }, delayed: false },
          {
            id: batchJobId(now[BATCH_MAX].id),
            data: { batch: now.slice(BATCH_MAX, 2 * BATCH_MAX).map((m) => m.payload) },
            delayed: false,
          },
          { id: outboxJobId(now[2 * BATCH_MAX].id), data: now[2 * BATCH_MAX].payload, delayed: false },
          { id: outboxJobId(delayed.id), data: delayed.payload, delayed: true },
        ].sort((a, b) => a.id.localeCompare(b.id));
        expect(await jobsOf(env)).to.deep.equal(expected);
        const reconciler = await env.services.queues.get(QUEUES.callbackReconciler).getJobs(['waiting']);
        expect(
          reconciler.map((j) => j.data).sort((a, b) => String(a.callbackId).localeCompare(String(b.callbackId))),
        ).to.deep.equal(
          [callbacks.payload, lone.payload].sort((a, b) => String(a.callbackId).localeCompare(String(b.callbackId))),
        );
      } finally {
        await env.close();
      }
    });

    it("a batch holds its elements' work: a later add of that work folds into it; work that has a live job is left out of it", async () => {
      const env = await startTestEnv();
      try {
        const [alone] = pushes(1);
        await publish(env, [alone]);
        const again = outboxMessage(QUEUES.providerPush, 'push', { paymentId: alone.payload.paymentId });
        const [b, c] = pushes(2);
        await publish(env, [again, b, c]);
        expect(await jobsOf(env)).to.deep.equal(
          [
            { id: outboxJobId(alone.id), data: alone.payload, delayed: false },
            { id: batchJobId(again.id), data: { batch: [b.payload, c.payload] }, delayed: false },
          ].sort((x, y) => x.id.localeCompare(y.id)),
        );
        // the re-drive's add of b's work is folded into the batch
        expect(
          await env.services.queues.addUnlessHeld(
            QUEUES.providerPush,
            'push',
            { paymentId: b.payload.paymentId },
            { jobId: `rd-${randomUUID()}` },
          ),
        ).to.equal(batchJobId(again.id));
        expect((await jobsOf(env)).length).to.equal(2);
      } finally {
        await env.close();
      }
    });
  });

  describe('run by the provider-push pool', () => {
    let env: TestEnv;
    let sandboxPort: number;
    let sandboxUrl: string;
    let client: Awaited<ReturnType<typeof aMerchant>>['client'];

    before(async () => {
      // the sandbox provider is down until the test starts it
      sandboxPort = await freePort();
      sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
      env = await startTestEnv({
        SANDBOX_PROVIDER_PORT: String(sandboxPort),
        SANDBOX_PROVIDER_URL: sandboxUrl,
        SANDBOX_CALLBACK_DELAY_MS: '60000',
        RATE_LIMIT_PER_MINUTE: '100000',
      });
      ({ client } = await aMerchant(env));
    });
    after(() => env.close());

    /** A batch job added as the publisher adds it, and its answer once it has finished. */
    const runBatch = async (payloads: Record<string, string>[], { raw = false } = {}): Promise<Job> => {
      const id = batchJobId(randomUUID());
      const queue = env.services.queues.get(QUEUES.providerPush);
      // raw: straight into BullMQ, past the registry's checks (what older or foreign code could queue)
      if (raw) await queue.add('push', { batch: payloads }, { jobId: id });
      else
        await env.services.queues.addMany(QUEUES.providerPush, [
          { jobName: 'push', data: { batch: payloads }, opts: { jobId: id } },
        ]);
      return eventually(async () => {
        const job = await queue.getJob(id);
        return job?.finishedOn ? job : undefined;
      }, 20_000);
    };

    it('each element runs as its own job: one that fails is retried by a job of its own, one its guard refuses is dropped', async () => {
      // payments created while no pool runs; their own jobs are removed, so only the batch pushes them
      const [first, second, third] = await Promise.all([aPayment(client), aPayment(client), aPayment(client)]);
      await env.services.queues.get(QUEUES.providerPush).obliterate({ force: true });
      await env.spawn('workers/provider-push/index.ts');

      const failing = await runBatch([
        { paymentId: first.id, requestId: 'req_batch' },
        { paymentId: 'not-a-payment-id' },
      ]);
      expect(failing.failedReason ?? null).to.equal(null);
      expect(failing.returnvalue).to.deep.equal(['retried', 'refused']);
      // the provider could not be reached: the payment has a job of its own, delayed by the queue's backoff, and is unsent
      const own = await eventually(async () =>
        (await env.services.queues.get(QUEUES.providerPush).getJobs(['delayed', 'waiting', 'active', 'failed'])).find(
          (j) => j.data.paymentId === first.id,
        ),
      );
      expect(own.data).to.deep.equal({ paymentId: first.id, requestId: 'req_batch' });
      expect(own.delay).to.equal(1000);
      expect((await env.services.db('payments').where({ id: first.id }).first()).sent_at).to.equal(null);

      // once the provider is up, that job prompts the client once
      await startSandbox(env, { SANDBOX_PROVIDER_PORT: String(sandboxPort), SANDBOX_CALLBACK_DELAY_MS: '60000' });
      await eventually(async () => (await env.services.db('payments').where({ id: first.id }).first()).sent_at, 20_000);
      expect((await sandboxTransaction(sandboxUrl, 'vodacom', first.id)).sandbox.requests).to.equal(1);

      // a batch of two: both prompted once, the batch's answer is each element's
      const done = await runBatch([{ paymentId: second.id }, { paymentId: third.id }]);
      expect(done.returnvalue).to.deep.equal(['sent', 'sent']);
      // the batch gave its elements' work keys back
      for (const p of [second, third])
        expect(
          await env.services.redis.get(`${queueKeyPrefix(env.config.queuePrefix, QUEUES.providerPush)}:held:${p.id}`),
        ).to.equal(null);
      for (const p of [second, third])
        expect((await sandboxTransaction(sandboxUrl, 'vodacom', p.id)).sandbox.requests).to.equal(1);

      // run again (a batch is safe to run twice): nothing is sent again
      const again = await runBatch([{ paymentId: second.id }, { paymentId: third.id }, { paymentId: first.id }]);
      expect(again.returnvalue).to.deep.equal(['already-sent', 'already-sent', 'already-sent']);
      for (const p of [first, second, third])
        expect((await sandboxTransaction(sandboxUrl, 'vodacom', p.id)).sandbox.requests).to.equal(1);
    });

    it('a batch payload that is not a list of 1 to 1000 jobs fails at once, without retries', async () => {
      for (const batch of [[], Array.from({ length: 1001 }, () => ({ paymentId: `pay_${randomUUID()}` }))]) {
        const job = await runBatch(batch, { raw: true });
        expect(job.failedReason).to.match(/a batch job holds 1 to 1000 jobs/);
        expect(job.attemptsMade).to.equal(1);
      }
    });
  });
});
