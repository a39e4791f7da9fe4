import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { mobilePayment } from '../helpers/money';
import { writeOperations } from '../../shared/operations/writer';
import type { OperationWrite } from '../../shared/operations/operationWrite';
import { creationWrite } from '../../shared/operations/transition';
import { mobileMoneyPaymentKind } from '../../shared/payments/kind';

/**
 * The POSTs of concurrent requests are written by the kernel's writer in one statement, one commit:
 * each payment still comes with its own key, status change and push, and a refused row (a
 * reference already used) fails only its own request. Rows written by one statement share a
 * transaction id (xmin), which is how the test sees the commits.
 */
describe('payments created together', () => {
  // the text of the metadata is kept as sent: its key order (jsonb would sort the keys)
  const metadata = { zeta: 'sent first', alpha: 'sent second', m: 'é "quoted"' };

  const burst = async (
    env: TestEnv,
    client: Awaited<ReturnType<TestEnv['merchant']>>['client'],
    bodies: Record<string, unknown>[],
  ) => {
    const answers = await Promise.all(
      bodies.map((b) => client.post('/v1/payments', b, { idempotencyKey: randomUUID() })),
    );
    const created = answers.filter((a) => a.status === 201).map((a) => a.body.id as string);
    const db = env.services.db;
    const payments: { id: string; xmin: string; metadata: string }[] = await db('payments')
      .whereIn('id', created)
      .select('id', 'xmin', db.raw('metadata::text as metadata'));
    const changes: { payment_id: string; xmin: string }[] = await db('payment_status_changes')
      .whereIn('payment_id', created)
      .select('payment_id', 'xmin');
    const pushes: { paymentId: string; xmin: string }[] = await db('outbox')
      .whereRaw(`payload->>'paymentId' = any(?)`, [created])
      .select(db.raw(`payload->>'paymentId' as "paymentId"`), 'xmin');
    return { answers, created, payments, changes, pushes };
  };

  describe('through the API', () => {
    let env: TestEnv;
    let client: Awaited<ReturnType<TestEnv['merchant']>>['client'];
    before(async () => {
      env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '100000' });
      client = (await env.merchant({ scope: 'full' })).client;
    });
    after(() => env.close());

    it('a burst of 24: each payment with its one status change and push in its own commit, in fewer commits than payments', async () => {
      const bodies = Array.from({ length: 24 }, () => mobilePayment('243990000001', { metadata }));
      const { answers, created, payments, changes, pushes } = await burst(env, client, bodies);
      expect(answers.map((a) => a.status)).to.deep.equal(bodies.map(() => 201));
      expect(payments).to.have.length(24);
      for (const p of payments) {
        expect(p.metadata).to.equal(JSON.stringify(metadata));
        expect(changes.filter((c) => c.payment_id === p.id).map((c) => c.xmin)).to.deep.equal([p.xmin]);
        // one push row each (its xmin moves when the row is marked enqueued)
        expect(pushes.filter((o) => o.paymentId === p.id)).to.have.length(1);
      }
      expect(new Set(payments.map((p) => p.xmin)).size, 'commits').to.be.below(24);
      // no card yet is SQL NULL, as the lone statement writes it (not the JSON null)
      const cards = await env.services
        .db('payments')
        .whereIn('id', created)
        .select(env.services.db.raw('card is null as none'));
      expect(cards.map((c) => c.none)).to.deep.equal(created.map(() => true));
      // what each request was answered is what a GET answers, metadata text and all
      for (const a of answers) {
        const got = await client.get(`/v1/payments/${a.body.id}`);
        expect(got.body).to.deep.equal(a.body);
        expect(got.text).to.contain(`"metadata":${JSON.stringify(metadata)}`);
      }
      expect(new Set(created).size).to.equal(24);
    });

    it('a lone POST is written alone, its card SQL NULL as a batch writes it', async () => {
      const lone = await client.post('/v1/payments', mobilePayment('243990000001', { metadata }));
      expect(lone.status).to.equal(201);
      const row = await env.services
        .db('payments')
        .where({ id: lone.body.id })
        .first(env.services.db.raw('card is null as none'), env.services.db.raw('metadata::text as metadata'));
      expect(row).to.deep.equal({ none: true, metadata: JSON.stringify(metadata) });
      expect((await client.get(`/v1/payments/${lone.body.id}`)).body).to.deep.equal(lone.body);
    });

    it('one request of a burst reusing a reference gets 409 reference-conflict; the others are created', async () => {
      const used = mobilePayment('243990000001');
      expect((await client.post('/v1/payments', used)).status).to.equal(201);
      const bodies = Array.from({ length: 12 }, (_, i) =>
        i === 5
          ? mobilePayment('243990000001', { reference: used.reference, amount: 4_242 })
          : mobilePayment('243990000001'),
      );
      const { answers, payments } = await burst(env, client, bodies);
      expect(answers.map((a) => a.status)).to.deep.equal(bodies.map((_, i) => (i === 5 ? 409 : 201)));
      expect(answers[5].body.error.code).to.equal('reference-conflict');
      expect(payments).to.have.length(11);
      expect(await env.services.db('payments').where({ reference: used.reference }).select('amount')).to.deep.equal([
        { amount: 10_000 },
      ]);
    });
  });

  describe('two batches sharing references (the writer)', () => {
    let env: TestEnv;
    before(async () => (env = await startTestEnv()));
    after(() => env.close());

    it('written in one order: the second waits for the first and is refused for the reference, never a deadlock', async function () {
      this.timeout(30_000);
      const { client } = await env.merchant({ scope: 'full' });
      const db = env.services.db;
      const made = await client.post('/v1/payments', mobilePayment('243990000001'));
      const template = await db('payments').where({ id: made.body.id }).first();
      const batch = (refs: string[]): OperationWrite[] =>
        refs.map((reference) =>
          creationWrite({ ...template, id: `pay_${randomUUID()}`, reference }, [], {
            merchant_id: template.merchant_id,
            environment: template.environment,
            key: randomUUID(),
            method: 'POST',
            path: '/v1/payments',
            request_hash: 'h',
            status: 'in_progress',
            response_status: null,
            response_headers: null,
            response_body: null,
            window_ms: 60_000,
            now_ms: Date.now(),
            signature: null,
            signature_expires: null,
          }),
        );
      const insertPaymentsWithKeys = (_db: unknown, ws: OperationWrite[]) =>
        writeOperations(db, mobileMoneyPaymentKind.sql, ws);
      for (let round = 0; round < 5; round++) {
        const refs = Array.from({ length: 300 }, (_, i) => `crosswise-${round}-${String(i).padStart(3, '0')}`);
        // the same references, one batch in each order, at the same time
        const results = await Promise.allSettled([
          insertPaymentsWithKeys(db, batch(refs)),
          insertPaymentsWithKeys(db, batch([...refs].reverse())),
        ]);
        const refused = results
          .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
          .map((r) => (r.reason as { code?: string }).code);
        expect(refused, `round ${round}`).to.deep.equal(['23505']);
        expect(results.find((r) => r.status === 'fulfilled')).to.deep.include({ value: refs.map(() => true) });
        expect(
          (await db('payments').where('reference', 'like', `crosswise-${round}-%`).count({ n: '*' }))[0].n,
        ).to.equal(300);
      }
    });

    it('writes one row of a signature sent twice in one statement under two keys, and records that key with it (docs/decisions.md#replayed-signed-requests)', async () => {
      const { client } = await env.merchant({ scope: 'full' });
      const db = env.services.db;
      const made = await client.post('/v1/payments', mobilePayment('243990000001'));
      const template = await db('payments').where({ id: made.body.id }).first();
      const signature = randomUUID().replace(/-/g, '');
      const keys = [randomUUID(), randomUUID(), randomUUID()];
      const writes = keys.map((key, i) =>
        creationWrite({ ...template, id: `pay_${randomUUID()}`, reference: `signed-twice-${i}-${signature}` }, [], {
          merchant_id: template.merchant_id,
          environment: template.environment,
          key,
          method: 'POST',
          path: '/v1/payments',
          request_hash: 'h',
          status: 'completed',
          response_status: 201,
          response_headers: null,
          response_body: null,
          window_ms: 60_000,
          now_ms: Date.now(),
          signature,
          signature_expires: Math.floor(Date.now() / 1000) + 300,
        }),
      );
      const written = await writeOperations(db, mobileMoneyPaymentKind.sql, writes);
      expect(written.filter(Boolean)).to.have.length(1);
      const winner = keys[written.indexOf(true)];
      expect(await db('request_signatures').where({ signature }).select('idempotency_key')).to.deep.equal([
        { idempotency_key: winner },
      ]);
      expect(await db('idempotency_keys').whereIn('key', keys).pluck('key')).to.deep.equal([winner]);
      // the same signature again with the key it was taken with goes to that key (held: nothing written); with another, nothing
      expect(
        await writeOperations(db, mobileMoneyPaymentKind.sql, [
          { ...writes[written.indexOf(true)], id: `pay_${randomUUID()}` },
        ]),
      ).to.deep.equal([false]);
      expect(
        await writeOperations(db, mobileMoneyPaymentKind.sql, [
          { ...writes[written.indexOf(false)], id: `pay_${randomUUID()}` },
        ]),
      ).to.deep.equal([false]);
      expect(
        await db('payments').where('reference', 'like', `signed-twice-%-${signature}`).count({ n: '*' }),
      ).to.deep.equal([{ n: 1 }]);
    });
  });
});
