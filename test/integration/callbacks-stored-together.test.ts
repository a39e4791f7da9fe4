import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { insertCallbacksWithJobs } from '../../shared/db/sql/callbacks';
import { outboxJobId, outboxMessage } from '../../shared/queues/outbox';
import { QUEUES } from '../../shared/queues/names';
import { callbackBody, sendCallback } from '../helpers/money';

/**
 * The callbacks of concurrent requests are stored in one statement, one commit (KERNEL_COALESCE),
 * and their jobs are published together: each callback still gets its inbox row, its outbox row
 * and its job; a batch commits whole or not at all. Rows written by one statement share a
 * transaction id (xmin), which is how the test sees the batches.
 */
describe('provider callbacks stored together', () => {
  const burst = async (env: TestEnv, n: number) => {
    const ids = Array.from({ length: n }, () => `pay_${randomUUID()}`);
    const answers = await Promise.all(ids.map((id) => sendCallback(env.baseUrl, 'vodacom-sandbox', callbackBody({ external_id: id, status: 'succeeded' }))));
    expect(answers.map((a) => a.status)).to.deep.equal(ids.map(() => 200));
    const rows: { id: string; xmin: string }[] = await env.services.db('provider_callbacks').whereIn('object_id', ids).select('id', 'xmin');
    expect(rows).to.have.length(n);
    const jobs: { id: string; xmin: string; payload: { callbackId: string } }[] = await env.services.db('outbox')
      .whereRaw(`payload->>'callbackId' = any(?)`, [rows.map((r) => r.id)])
      .select('id', 'xmin', 'payload');
    // every callback has its job row, written in its callback's transaction
    expect(jobs.map((j) => j.payload.callbackId).sort()).to.deep.equal(rows.map((r) => r.id).sort());
    for (const j of jobs) expect(j.xmin).to.equal(rows.find((r) => r.id === j.payload.callbackId)!.xmin);
    // and its BullMQ job, under the outbox id
    const queue = env.services.queues.get(QUEUES.callbackReconciler);
    const queued = await Promise.all(jobs.map((j) => queue.getJob(outboxJobId(j.id))));
    expect(queued.map((q) => q?.data.callbackId).sort()).to.deep.equal(rows.map((r) => r.id).sort());
    return new Set(rows.map((r) => r.xmin)).size;
  };

  describe('KERNEL_COALESCE=true', () => {
    let env: TestEnv;
    before(async () => (env = await startTestEnv()));
    after(() => env.close());

    it('a burst of 30 callbacks: every one stored with its job, in fewer commits than callbacks', async () => {
      expect(await burst(env, 30)).to.be.below(30);
    });

    it('a batch that Postgres refuses writes none of its rows', async () => {
      const item = () => {
        const id = randomUUID();
        return {
          row: { id, provider: 'vodacom-sandbox', raw_body: '{}', verified: true, provider_event_id: null, object_kind: 'payment', object_id: `pay_${randomUUID()}`, reported_status: 'succeeded', provider_ref: null },
          job: outboxMessage(QUEUES.callbackReconciler, 'apply-callback', { callbackId: id, kind: 'payment' }),
        };
      };
      const a = item();
      const b = { ...item(), row: { ...a.row, object_id: `pay_${randomUUID()}` } }; // the same inbox id twice
      let refused: unknown;
      await insertCallbacksWithJobs(env.services.db, [a, b]).catch((err) => (refused = err));
      expect(String(refused)).to.match(/duplicate key/);
      expect(await env.services.db('provider_callbacks').where({ id: a.row.id })).to.have.length(0);
      expect(await env.services.db('outbox').whereIn('id', [a.job.id, b.job.id])).to.have.length(0);
    });
  });

  describe('KERNEL_COALESCE=false', () => {
    let env: TestEnv;
    before(async () => (env = await startTestEnv({ KERNEL_COALESCE: 'false' })));
    after(() => env.close());

    it('each callback its own commit', async () => {
      expect(await burst(env, 12)).to.equal(12);
    });
  });
});
