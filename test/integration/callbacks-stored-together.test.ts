import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { insertCallbacksWithJobs } from '../../shared/db/sql/callbacks';
import { outboxJobId, outboxMessage } from '../../shared/queues/outbox';
import { QUEUES } from '../../shared/queues/names';
import { guardCallbackJob } from '../../workers/callback-reconciler/job';
import { eventually } from '../../scripts/lib/processes';
import { checkLedger } from '../../shared/ledger/check';
import { aPayment, callbackBody, sendCallback } from '../helpers/money';

/**
 * The callbacks of concurrent requests are stored in one statement, one commit (shared/db/coalescer.ts),
 * with one job for those of a kind: each callback is still named by exactly one job, whose outbox
 * row commits with it and which is enqueued; a batch commits whole or not at all. Rows written by
 * one statement share a transaction id (xmin), which is how the test sees the batches, and a
 * transaction start time (now()), which ties each job to its callbacks.
 */
describe('provider callbacks stored together', () => {
  const burst = async (env: TestEnv, n: number) => {
    const ids = Array.from({ length: n }, () => `pay_${randomUUID()}`);
    const answers = await Promise.all(
      ids.map((id) =>
        sendCallback(env.baseUrl, 'vodacom-sandbox', callbackBody({ external_id: id, status: 'succeeded' })),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(ids.map(() => 200));
    const db = env.services.db;
    // received_at and created_at default to now(), the start time of the writing transaction; an
    // outbox row's xmin moves when it is marked enqueued (batched, shared/queues/outbox.ts), its created_at does not
    const rows: { id: string; xmin: string; at: string }[] = await db('provider_callbacks')
      .whereIn('object_id', ids)
      .select('id', 'xmin', db.raw('received_at::text as at'));
    expect(rows).to.have.length(n);
    const callbackIds = rows.map((r) => r.id);
    const jobs: { id: string; at: string; payload: Record<string, string> }[] = await db('outbox')
      .where({ queue: QUEUES.callbackReconciler })
      .where((q) =>
        q
          .whereRaw(`payload->>'callbackId' = any(?)`, [callbackIds])
          .orWhereRaw(`string_to_array(payload->>'callbackIds', ',') && ?::text[]`, [callbackIds]),
      )
      .select('id', db.raw('created_at::text as at'), 'payload');
    // every callback is named by exactly one job, written in its callback's transaction, of its kind
    const named = jobs.flatMap((j) =>
      guardCallbackJob(j.payload).callbackIds.map((callbackId) => ({ callbackId, at: j.at, kind: j.payload.kind })),
    );
    expect(named.map((x) => x.callbackId).sort()).to.deep.equal([...callbackIds].sort());
    for (const x of named) expect(x).to.include({ at: rows.find((r) => r.id === x.callbackId)!.at, kind: 'payment' });
    // and each job is enqueued under its outbox id
    const queue = env.services.queues.get(QUEUES.callbackReconciler);
    const queued = await Promise.all(jobs.map((j) => queue.getJob(outboxJobId(j.id))));
    expect(queued.map((q) => q?.data)).to.deep.equal(jobs.map((j) => j.payload));
    return { commits: new Set(rows.map((r) => r.xmin)).size, jobs: jobs.length };
  };

  describe('stored through the web', () => {
    let env: TestEnv;
    before(async () => (env = await startTestEnv()));
    after(() => env.close());

    it('a burst of 30 callbacks: every one stored with a job naming it, in fewer commits and jobs than callbacks', async () => {
      const { commits, jobs } = await burst(env, 30);
      expect(commits).to.be.below(30);
      expect(jobs).to.equal(commits);
    });

    it('a batch that Postgres refuses writes none of its rows', async () => {
      const row = () => ({
        id: randomUUID(),
        provider: 'vodacom-sandbox',
        raw_body: '{}',
        verified: true,
        provider_event_id: null,
        object_kind: 'payment',
        object_id: `pay_${randomUUID()}`,
        reported_status: 'succeeded',
        provider_ref: null,
        failure_code: null,
        failure_message: null,
        amount: null,
        currency: null,
      });
      const a = row();
      const b = { ...row(), id: a.id }; // the same inbox id twice
      const job = outboxMessage(QUEUES.callbackReconciler, 'apply-callback', {
        callbackIds: `${a.id},${b.id}`,
        kind: 'payment',
      });
      let refused: unknown;
      await insertCallbacksWithJobs(env.services.db, [a, b], [job]).catch((err) => (refused = err));
      expect(String(refused)).to.match(/duplicate key/);
      expect(await env.services.db('provider_callbacks').where({ id: a.id })).to.have.length(0);
      expect(await env.services.db('outbox').where({ id: job.id })).to.have.length(0);
    });
  });

  describe('applied by the callback-reconciler', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestEnv();
      await env.spawn('workers/callback-reconciler/index.ts');
    });
    after(async () => {
      expect(await checkLedger(env.services.db)).to.deep.equal([]);
      await env.close();
    });

    it('a job naming many callbacks applies each once: every payment succeeds, credited once', async function () {
      this.timeout(30_000);
      const { client } = await env.merchant({ scope: 'full' });
      const payments = await Promise.all(
        Array.from({ length: 20 }, (_, i) => aPayment(client, { phone: `2439900000${String(i).padStart(2, '0')}` })),
      );
      const ids = payments.map((p) => p.id as string);
      const answers = await Promise.all(
        ids.map((id) =>
          sendCallback(
            env.baseUrl,
            'vodacom-sandbox',
            callbackBody({ external_id: id, status: 'succeeded', provider_ref: `R-${id}` }),
          ),
        ),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(ids.map(() => 200));
      const jobs = await env.services
        .db('outbox')
        .where({ queue: QUEUES.callbackReconciler })
        .whereRaw(`payload->>'callbackIds' is not null`);
      expect(jobs.length, 'callbacks stored together share a job').to.be.above(0);
      await eventually(
        async () =>
          (await env.services.db('provider_callbacks').whereIn('object_id', ids).whereNotNull('processed_at'))
            .length === ids.length,
        20_000,
      );
      const outcomes = await env.services.db('provider_callbacks').whereIn('object_id', ids).select('outcome');
      expect(outcomes.map((o) => o.outcome)).to.deep.equal(ids.map(() => 'applied'));
      const rows = await env.services.db('payments').whereIn('id', ids).select('status');
      expect(rows.map((r) => r.status)).to.deep.equal(ids.map(() => 'succeeded'));
      const credits = await env.services.db('ledger_transactions').whereIn('reference_id', ids).select('reference_id');
      expect(credits.map((c) => c.reference_id).sort()).to.deep.equal([...ids].sort());
    });
  });
});
