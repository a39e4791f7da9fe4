import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { claimAttempts, finishAttempts } from '../../shared/webhooks/deliveries';
import { emitEvent } from '../helpers/webhooks';

/**
 * The claim and outcome statements on their own (no sender running): each delivery is reached
 * through its primary key and locked in id order, so these check what that must not change.
 */
describe('webhook attempt claims and outcomes (Postgres)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  const LEASE_MS = 15_000;

  before(async () => {
    env = await startTestEnv();
  });
  after(async () => {
    await env?.close();
  });

  const db = () => env.services.db;

  async function pendingDeliveries(count: number): Promise<string[]> {
    const { merchant } = await env.merchant();
    const hook = (
      await env.admin('POST', '/admin/webhooks', {
        merchant_id: merchant.id,
        url: 'http://127.0.0.1:9/hook',
        events: ['payment.*'],
        environment: 'test',
      })
    ).body;
    for (let i = 0; i < count; i++) await emitEvent(env.services, merchant.id);
    const rows: { id: string }[] = await db()('webhook_deliveries').where({ webhook_id: hook.id }).select('id');
    return rows.map((r) => r.id);
  }

  it('claims each due delivery once, whoever asks for it and in whatever order, with its event and a new attempt row', async () => {
    const ids = await pendingDeliveries(12);
    const asked = [...ids, ...ids.slice(0, 4)].reverse();
    // three overlapping batches at once, as three senders would send them
    const batches = await Promise.all(
      [asked, ids.slice(2, 9), ids.slice(6)].map((b) => claimAttempts(db(), b, LEASE_MS, false)),
    );
    const claimed = batches.flat();
    expect(claimed.map((c) => c.id).sort()).to.deep.equal([...ids].sort());
    for (const c of claimed) {
      expect(c).to.include({ attempts: 1, round: 1 });
      expect(c.event_body.data.object).to.be.an('object');
      expect(c.attempt_id).to.be.a('number');
    }
    const attempts = await db()('webhook_attempts').whereIn('delivery_id', ids).orderBy('delivery_id');
    expect(attempts.map((a) => [a.delivery_id, a.attempt, a.finished_at])).to.deep.equal(
      [...ids].sort().map((id) => [id, 1, null]),
    );
    // leased: asked again, nothing is claimed
    expect(await claimAttempts(db(), ids, LEASE_MS, false)).to.deep.equal([]);
  });

  it('records an attempt whose lease ran out as interrupted when the next one is claimed, and refuses the stale outcome', async () => {
    const [id] = await pendingDeliveries(1);
    const [first] = await claimAttempts(db(), [id], LEASE_MS, false);
    await db()('webhook_deliveries')
      .where({ id })
      .update({ lease_until: db().raw(`now() - interval '1 second'`) });
    const [second] = await claimAttempts(db(), [id], LEASE_MS, false);
    expect(second).to.include({ id, attempts: 2 });
    const cut = await db()('webhook_attempts').where({ delivery_id: id, attempt: 1 }).first();
    expect(cut.error).to.equal('interrupted');
    expect(cut.finished_at).to.be.an.instanceOf(Date);

    const ok = { statusCode: 200, latencyMs: 3, error: null, excerpt: null };
    // the sender of attempt 1 answers late: its outcome is kept on its attempt, the delivery does not move
    expect(
      await finishAttempts(db(), [{ claim: first, result: ok, verdict: { status: 'succeeded' } }], 60_000),
    ).to.deep.equal([null]);
    expect(
      await finishAttempts(db(), [{ claim: second, result: ok, verdict: { status: 'succeeded' } }], 60_000),
    ).to.deep.equal(['succeeded']);
    const attempts = await db()('webhook_attempts').where({ delivery_id: id }).orderBy('attempt');
    expect(attempts.map((a) => [a.attempt, a.status_code, a.finished_at !== null])).to.deep.equal([
      [1, 200, true],
      [2, 200, true],
    ]);
    expect(await db()('webhook_deliveries').where({ id }).first()).to.include({
      status: 'succeeded',
      attempts: 2,
      lease_until: null,
    });
  });
});
