import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { checkLedger } from '../../shared/ledger/check';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { applyCallbackInOneStatement } from '../../shared/operations/oneStatement';
import { mobileMoneyPaymentKind } from '../../shared/payments/kind';
import { callbackBody, aPayment, sendCallback } from '../helpers/money';
import { KINDS } from '../../shared/kindRegistry';

/**
 * A callback's transition in one statement (shared/operations/oneStatement.ts) writes exactly what the general
 * path writes (row, history, event, deliveries with their jobs, ledger posting, inbox outcome),
 * and only when it may: once per callback, never over a change it did not see, never for a
 * first posting; a repeat or a late report only gets its outcome; concurrent callbacks share their read and their write
 * (shared/db/coalescer.ts), each still a compare-and-set on its own row.
 */
describe('callbacks applied in one statement', () => {
  let env: TestEnv;
  let client: Awaited<ReturnType<TestEnv['merchant']>>['client'];
  const db = () => env.services.db;

  before(async () => {
    env = await startTestEnv();
    const m = await env.merchant({ scope: 'full' });
    client = m.client;
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: m.merchant.id,
      url: 'http://127.0.0.1:9/hook',
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
  });
  after(() => env.close());

  async function stored(paymentId: string, status = 'succeeded', extra: Record<string, string> = {}) {
    const res = await sendCallback(
      env.baseUrl,
      'vodacom-sandbox',
      callbackBody({ external_id: paymentId, status, provider_ref: `REF-${paymentId}`, ...extra }),
    );
    expect(res.status).to.equal(200);
    const rows = await db()('provider_callbacks').where({ object_id: paymentId }).orderBy('received_at');
    return rows[rows.length - 1].id as string;
  }

  /** Everything a payment's success wrote, without the ids and times that differ by nature. */
  async function written(paymentId: string) {
    const p = await db()('payments').where({ id: paymentId }).first();
    const history = await db()('payment_status_changes')
      .where({ payment_id: paymentId })
      .orderBy('id')
      .select('from_status', 'to_status', 'reason');
    const events = await db()('events').where({ object_id: paymentId });
    const deliveries = await db()('webhook_deliveries').whereIn(
      'event_id',
      events.map((e) => e.id),
    );
    const jobs = await db()('outbox').whereRaw(`payload->>'deliveryId' = any(?)`, [deliveries.map((d) => d.id)]);
    const tx = await db()('ledger_transactions').where({ reference_id: paymentId });
    const entries = await db()('ledger_entries as e')
      .join('ledger_accounts as a', 'a.id', 'e.account_id')
      .whereIn(
        'e.transaction_id',
        tx.map((t) => t.id),
      )
      .orderBy('a.kind')
      .select('a.owner', 'a.kind', 'e.amount', 'e.unfolded');
    const inbox = await db()('provider_callbacks').where({ object_id: paymentId }).select('outcome', 'processed_at');
    const body = events[0]?.body;
    return {
      payment: {
        status: p.status,
        version: p.version,
        provider_ref: p.provider_ref === `REF-${paymentId}`,
        completed: typeof p.completed,
        failure_code: p.failure_code,
      },
      history,
      events: events.map((e) => ({
        type: e.type,
        object_version: e.object_version,
        keys: Object.keys(e.body).sort(),
        objectKeys: Object.keys(body.data.object).sort(),
        status: e.body.data.object.status,
      })),
      deliveries: deliveries.map((d) => ({ redelivery: d.redelivery, created: d.created === events[0].created })),
      jobs: jobs.map((j) => ({ queue: j.queue, job_name: j.job_name, keys: Object.keys(j.payload).sort() })),
      ledger: {
        transactions: tx.map((t) => ({
          kind: t.kind,
          merchant: t.merchant_id === p.merchant_id,
          currency: t.currency,
          environment: t.environment,
        })),
        entries: entries.map((e) => ({ ...e, owner: e.owner === p.merchant_id ? 'merchant' : e.owner })),
      },
      inbox: inbox.map((r) => ({ outcome: r.outcome, processed: r.processed_at !== null })),
    };
  }

  it('writes what the general path writes, and is not taken for a first posting (its accounts do not exist yet)', async () => {
    const first = await aPayment(client, { phone: '243990000001' });
    const cb1 = await stored(first.id);
    // no ledger account of this merchant yet: the general path creates them
    expect(await applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, cb1, env.services.log)).to.equal(
      undefined,
    );
    expect((await applyStoredCallback(env.services, KINDS, cb1)).outcome).to.equal('applied');

    const second = await aPayment(client, { phone: '243990000001' });
    const cb2 = await stored(second.id);
    const fast = await applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, cb2, env.services.log);
    expect(fast?.outcome).to.equal('applied');
    expect(fast?.callback?.objectId).to.equal(second.id);

    const general = await written(first.id);
    const one = await written(second.id);
    expect(one).to.deep.equal(general);
    expect(one.payment).to.deep.include({ status: 'succeeded', version: general.payment.version, completed: 'number' });
    expect(one.history.at(-1)).to.deep.equal({
      from_status: 'processing',
      to_status: 'succeeded',
      reason: 'provider-callback',
    });
    expect(one.events).to.have.length(1);
    expect(one.deliveries).to.have.length(1);
    expect(one.jobs).to.deep.equal([
      { queue: 'webhook-sender', job_name: 'deliver', keys: ['deliveryId', 'webhookId'] },
    ]);
    expect(one.ledger.entries.map((e) => e.amount).reduce((a, b) => a + b, 0)).to.equal(0);
    expect(one.inbox).to.deep.equal([{ outcome: 'applied', processed: true }]);
    // the API shows the same payment either way
    const api1 = (await client.get(`/v1/payments/${first.id}`)).body;
    const api2 = (await client.get(`/v1/payments/${second.id}`)).body;
    expect(api2.status).to.equal(api1.status);
    expect(api2.completed).to.be.a('number');
  });

  it('applies a callback once however many jobs run it at once, and marks a repeat and a late report without changing anything', async () => {
    const p = await aPayment(client, { phone: '243990000001' });
    const cb = await stored(p.id);
    const runs = await Promise.all(
      [1, 2, 3].map(() => applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, cb, env.services.log)),
    );
    expect(runs.map((r) => r?.outcome).sort()).to.deep.equal(['already-processed', 'already-processed', 'applied']);
    expect((await applyStoredCallback(env.services, KINDS, cb)).outcome).to.equal('already-processed');
    expect(await db()('ledger_transactions').where({ reference_id: p.id })).to.have.length(1);
    expect(await db()('events').where({ object_id: p.id })).to.have.length(1);

    const before = await written(p.id);
    const row = await db()('payments').where({ id: p.id }).first();

    // the provider says it again, twice at once: one outcome `duplicate` each, nothing else written
    const again = [await stored(p.id), await stored(p.id)];
    const repeats = await Promise.all(
      again.map((id) => applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, id, env.services.log)),
    );
    expect(repeats.map((r) => r?.outcome)).to.deep.equal(['duplicate', 'duplicate']);
    for (const id of again)
      expect(await db()('provider_callbacks').where({ id }).first())
        .to.include({ outcome: 'duplicate' })
        .and.to.have.property('processed_at')
        .that.is.instanceOf(Date);
    // a failure reported after the success: ignored as late
    const late = await stored(p.id, 'failed', { failure_code: 'insufficient-funds' });
    expect(
      (await applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, late, env.services.log))?.outcome,
    ).to.equal('ignored-late');
    expect((await db()('provider_callbacks').where({ id: late }).first()).outcome).to.equal('ignored-late');
    const after = await written(p.id);
    expect(after.inbox.filter((c) => c.outcome === 'applied')).to.have.length(1);
    expect({ ...after, inbox: [] }).to.deep.equal({ ...before, inbox: [] });
    expect(await db()('payments').where({ id: p.id }).first()).to.deep.equal(row);

    // a repeat decided on a version the row no longer has marks nothing (compare-and-set), and is decided afresh
    const stale = await stored(p.id);
    const { markCallbacks } = await import('../../shared/providers/callbackOutcome');
    expect(
      await markCallbacks(db(), mobileMoneyPaymentKind.sql, [
        { callbackId: stale, outcome: 'duplicate', id: p.id, from: { status: 'succeeded', version: row.version - 1 } },
      ]),
    ).to.deep.equal([false]);
    expect((await db()('provider_callbacks').where({ id: stale }).first()).processed_at).to.equal(null);
    expect(
      (await applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, stale, env.services.log))?.outcome,
    ).to.equal('duplicate');
  });

  it('writes nothing over a change it did not see (compare-and-set on status and version)', async () => {
    const p = await aPayment(client, { phone: '243990000001' });
    const cb = await stored(p.id, 'failed', { failure_code: 'insufficient-funds', failure_message: 'no money' });
    // another writer moves the row first: the statement finds another version and writes nothing
    const row = await db()('payments').where({ id: p.id }).first();
    await db()('payments')
      .where({ id: p.id })
      .update({ version: row.version + 1 });
    const { writeOperations } = await import('../../shared/operations/writer');
    const wrote = await writeOperations(db(), mobileMoneyPaymentKind.sql, [
      {
        id: p.id,
        from: { status: 'processing', version: row.version },
        patch: {
          status: 'failed',
          version: row.version + 1,
          updated_at: new Date(),
          completed: 1,
          failure_code: 'x',
          failure_message: 'y',
        },
        history: { to: 'failed', reason: 'provider-callback' },
        callbackId: cb,
        environment: row.environment,
        event: null,
        deliveries: [],
        outbox: [],
        posting: null,
      },
    ]);
    expect(wrote).to.deep.equal([false]);
    expect((await db()('payments').where({ id: p.id }).first()).status).to.equal('processing');
    expect((await db()('provider_callbacks').where({ id: cb }).first()).processed_at).to.equal(null);
    // read afresh, the failure is applied with the provider's code
    const r = await applyCallbackInOneStatement(env.services, mobileMoneyPaymentKind, cb, env.services.log);
    expect(r?.outcome).to.equal('applied');
    const after = await db()('payments').where({ id: p.id }).first();
    expect(after).to.include({
      status: 'failed',
      failure_code: 'insufficient-funds',
      failure_message: 'no money',
      version: row.version + 2,
    });
    expect(await db()('ledger_transactions').where({ reference_id: p.id })).to.have.length(0);
    expect((await db()('events').where({ object_id: p.id }).first()).type).to.equal('payment.failed');
  });

  it('applies concurrent callbacks in shared statements, each row its own compare-and-set', async () => {
    const m = await env.merchant({ scope: 'full' });
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: m.merchant.id,
      url: 'http://127.0.0.1:9/hook',
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
    // the merchant's first posting creates its accounts (the general path)
    const first = await aPayment(m.client);
    expect(
      (await applyStoredCallback(env.services, KINDS, await stored(first.id), env.services.log, 'payment')).outcome,
    ).to.equal('applied');

    const ids = (await Promise.all(Array.from({ length: 14 }, () => aPayment(m.client)))).map((p) => p.id as string);
    // changed: another writer moves them after the read; twice: the provider reports it twice; rerun: one callback, two jobs
    const [changedA, changedB, twice, rerun] = ids.slice(-4);
    const plain = ids.slice(0, -4);
    const callbackOf = new Map<string, string>();
    for (const id of ids) callbackOf.set(id, await stored(id));
    const again = await stored(twice);
    const ghost = `pay_${randomUUID()}`;
    expect(
      (await sendCallback(env.baseUrl, 'vodacom-sandbox', callbackBody({ external_id: ghost, status: 'succeeded' })))
        .status,
    ).to.equal(200);
    const ghostCallback = (await db()('provider_callbacks').where({ object_id: ghost }).first()).id as string;
    const versions = new Map(
      (await db()('payments').whereIn('id', ids).select('id', 'version')).map((r) => [r.id, r.version as number]),
    );

    // another writer holds two rows and changes them once the shared write waits for them: the
    // first two jobs read alone, the rest in one read (so both held rows are read before the change)
    const holder = await db().transaction();
    await holder('payments').whereIn('id', [changedA, changedB]).increment('version', 1);
    const jobs = [...ids.map((id) => callbackOf.get(id)!), again, callbackOf.get(rerun)!, ghostCallback];
    const running = Promise.all(
      jobs.map((cb) => applyStoredCallback(env.services, KINDS, cb, env.services.log, 'payment')),
    );
    await eventually(
      async () =>
        (
          await db().raw(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          )
        ).rows.length > 0,
    );
    await holder.commit();
    const outcomes = (await running).map((r) => r.outcome);

    // each job's answer, and each callback's recorded outcome
    expect(outcomes.slice(0, ids.length - 2)).to.deep.equal(ids.slice(0, -2).map(() => 'applied'));
    expect([outcomes[ids.indexOf(twice)], outcomes[ids.length]].sort()).to.deep.equal(['applied', 'duplicate']);
    expect([outcomes[ids.indexOf(rerun)], outcomes[ids.length + 1]].sort()).to.deep.equal([
      'already-processed',
      'applied',
    ]);
    expect(outcomes[ids.length + 2]).to.equal('unknown-object');
    const inbox = new Map(
      (
        await db()('provider_callbacks')
          .whereIn('id', [...callbackOf.values(), again, ghostCallback])
          .select('id', 'outcome', 'processed_at')
      ).map((r) => [r.id, r]),
    );
    for (const id of ids.filter((i) => i !== twice))
      expect(inbox.get(callbackOf.get(id)!)?.outcome, id).to.equal('applied');
    expect([inbox.get(callbackOf.get(twice)!)?.outcome, inbox.get(again)?.outcome].sort()).to.deep.equal([
      'applied',
      'duplicate',
    ]);
    expect(inbox.get(ghostCallback)?.outcome).to.equal('unknown-object');
    expect([...inbox.values()].every((r) => r.processed_at !== null)).to.equal(true);

    // every payment moved once: its row, one history row, one event, its delivery with its job, one posting
    const rows = new Map(
      (
        await db()('payments')
          .whereIn('id', ids)
          .select('id', 'status', 'version', 'completed', db().raw('xmin::text as xmin'))
      ).map((r) => [r.id, r]),
    );
    for (const id of ids) {
      const row = rows.get(id);
      const moved = versions.get(id)! + ([changedA, changedB].includes(id) ? 2 : 1);
      expect(row, id).to.deep.include({ status: 'succeeded', version: moved });
      const history = await db()('payment_status_changes')
        .where({ payment_id: id, to_status: 'succeeded' })
        .select('from_status', 'reason');
      expect(history, id).to.deep.equal([{ from_status: 'processing', reason: 'provider-callback' }]);
      const events = await db()('events').where({ object_id: id });
      expect(
        events.map((e) => [e.type, e.object_version]),
        id,
      ).to.deep.equal([['payment.succeeded', moved]]);
      const deliveries = await db()('webhook_deliveries').where({ event_id: events[0].id });
      expect(
        deliveries.map((d) => d.webhook_id),
        id,
      ).to.deep.equal([hook.body.id]);
      const jobsOf = await db()('outbox').whereRaw(`payload->>'deliveryId' = ?`, [deliveries[0].id]);
      expect(
        jobsOf.map((j) => [j.queue, j.job_name]),
        id,
      ).to.deep.equal([['webhook-sender', 'deliver']]);
      const tx = await db()('ledger_transactions').where({ reference_id: id });
      expect(tx, id).to.have.length(1);
      const entries = await db()('ledger_entries').where({ transaction_id: tx[0].id });
      expect(entries.length, id).to.be.greaterThan(1);
    }
    // a refused write left nothing behind: no event, delivery or job of a move that did not happen
    expect(await db()('events').where({ merchant_id: m.merchant.id })).to.have.length(ids.length + 1);
    const orphans = await db().raw(
      `select o.id from outbox o where o.queue = 'webhook-sender' and not exists (select 1 from webhook_deliveries d where d.id = o.payload->>'deliveryId')`,
    );
    expect(orphans.rows).to.deep.equal([]);
    expect(await db()('payments').where({ id: ghost })).to.have.length(0);
    expect(await checkLedger(db())).to.deep.equal([]);
    // the plain callbacks shared statements: fewer transactions wrote them than there are payments
    const writers = new Set(plain.map((id) => rows.get(id).xmin));
    expect(writers.size).to.be.lessThan(plain.length);
  });
});
