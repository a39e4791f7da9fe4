import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { waitingOnLocks } from '../../scripts/lib/databases';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';
import type { ServiceClient } from '../../shared/client/signing';
import { newId } from '../../shared/ids';
import {
  outgoingDebit,
  outgoingDeliver,
  paymentCredit,
  type Currency,
  type Environment,
} from '../../shared/rules/ledger';
import { lastCutoff } from '../../shared/rules/settlement';
import { post, reverse } from '../../shared/ledger/postings';
import { settle } from '../../shared/settlements/settle';

const STL_ID = /^stl_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DAY = 86_400;

describe('daily settlement', () => {
  let env: TestEnv;
  let a: MerchantFixture;
  let aLive: ServiceClient;
  let b: MerchantFixture;
  const db = () => env.services.db;
  const deps = () => ({ db: db(), outbox: env.services.outbox, log: env.services.log, clock: env.services.clock });
  const now = () => Math.floor(Date.now() / 1000);

  /** Postings straight through the ledger, as the payment, refund and payout flows write them. */
  const at = (merchantId: string, environment: Environment = 'test', currency: Currency = 'USD') => {
    const base = { merchantId, environment, currency };
    return {
      credit: (amountCharged: number, fee: number) =>
        db().transaction((trx) =>
          post(
            trx,
            paymentCredit({ ...base, paymentId: newId('payment'), amountCharged, amountNet: amountCharged - fee, fee }),
          ),
        ),
      /** a refund or payout debit; `then` settles it (provider confirmed) or returns it (failed) */
      outgoing: async (kind: 'refund' | 'payout', amount: number, fee: number, then?: 'deliver' | 'return') => {
        const o = { ...base, referenceId: newId(kind), amount, fee };
        await db().transaction((trx) => post(trx, outgoingDebit(kind, o)));
        if (then === 'deliver') await db().transaction((trx) => post(trx, outgoingDeliver(kind, o)));
        if (then === 'return')
          await db().transaction((trx) => reverse(trx, `${kind}_debit`, o.referenceId, `${kind}_return`));
      },
    };
  };

  before(async () => {
    env = await startTestEnv();
    a = await env.merchant({ scope: 'read' });
    const live = await env.admin('POST', `/admin/merchants/${a.merchant.id}/credentials`, {
      environment: 'live',
      scope: 'read',
    });
    expect(live.status).to.equal(201);
    aLive = env.client(live.body);
    b = await env.merchant({ scope: 'read' });
  });
  after(() => env.close());

  let usd: any;
  let cdf: any;
  const tomorrow = () => now() + DAY;

  it('makes one batch per merchant, environment and currency with exact figures, even when two run at once', async () => {
    const m = at(a.merchant.id);
    await m.credit(10_000, 250);
    await m.credit(5_000, 100);
    await m.outgoing('refund', 2_000, 0, 'deliver'); // the deliver posting leaves available untouched: not covered
    await m.outgoing('payout', 3_000, 35);
    await m.outgoing('payout', 1_000, 15, 'return'); // a failed payout gives back its debit
    await at(a.merchant.id, 'test', 'CDF').credit(50_000, 0);
    await at(a.merchant.id, 'live', 'USD').credit(7_000, 70);

    const t = tomorrow();
    const [first, second] = await Promise.all([settle(deps(), { now: t }), settle(deps(), { now: t })]);
    const made = [...first, ...second];
    expect(made).to.have.length(3);
    const rows = await db()('settlements')
      .where({ merchant_id: a.merchant.id })
      .select('id', 'environment', 'currency');
    expect(rows).to.have.length(3);

    const oldest = await db()('ledger_transactions')
      .where({ merchant_id: a.merchant.id, environment: 'test', currency: 'USD' })
      .min('created_at as at')
      .first();
    usd = made.find((s) => s.environment === 'test' && s.currency === 'USD');
    expect(usd.id).to.match(STL_ID);
    expect(usd).to.deep.equal({
      id: usd.id,
      object: 'settlement',
      currency: 'USD',
      environment: 'test',
      period_start: Math.floor((oldest!.at as Date).getTime() / 1000),
      period_end: lastCutoff(t, 0),
      gross: 15_000,
      fees: 350,
      refunds: 2_000,
      payouts: 3_035, // 3 000 + 35 fee; the failed 1 015 left and came back
      net: 9_615, // 15 000 - 350 - 2 000 - 3 035: what moved on available
      count: 6, // 2 credits, 1 refund debit, 2 payout debits, 1 payout return
      created: usd.created,
    });
    expect(usd.created).to.be.within(now() - 5, now());
    cdf = made.find((s) => s.environment === 'test' && s.currency === 'CDF');
    expect(cdf).to.include({ gross: 50_000, fees: 0, refunds: 0, payouts: 0, net: 50_000, count: 1 });
    expect(made.find((s) => s.environment === 'live')).to.include({
      currency: 'USD',
      gross: 7_000,
      fees: 70,
      net: 6_930,
      count: 1,
    });

    // every covered transaction points at its batch; the settle posting at none
    const covered = await db()('ledger_transactions')
      .where({ merchant_id: a.merchant.id, environment: 'test', currency: 'USD' })
      .select('kind', 'settlement_id');
    expect(
      covered
        .filter((c) => c.settlement_id === usd.id)
        .map((c) => c.kind)
        .sort(),
    ).to.deep.equal([
      'payment_credit',
      'payment_credit',
      'payout_debit',
      'payout_debit',
      'payout_return',
      'refund_debit',
    ]);
    expect(covered.filter((c) => c.settlement_id === null).map((c) => c.kind)).to.deep.equal(['refund_deliver']);
  });

  it('records settlement.completed carrying the batch', async () => {
    const events = await db()('events')
      .where({ object_id: usd.id })
      .select('merchant_id', 'environment', 'type', 'object_version', 'body');
    expect(events).to.have.length(1);
    expect(events[0]).to.deep.include({
      merchant_id: a.merchant.id,
      environment: 'test',
      type: 'settlement.completed',
      object_version: 1,
    });
    expect(events[0].body.data).to.deep.equal({ object: usd, object_version: 1 });
    const res = await a.client.get(`/v1/events?type=settlement.completed`);
    expect(res.status).to.equal(200);
    expect(res.body.data.map((e: any) => e.data.object.id).sort()).to.deep.equal([usd.id, cdf.id].sort());
  });

  it('settles nothing twice: a second run makes no batch', async () => {
    expect(await settle(deps(), { now: tomorrow() })).to.deep.equal([]);
    expect(await db()('settlements').count('* as n').first()).to.deep.equal({ n: 3 });
    expect(await db()('events').where({ type: 'settlement.completed' }).count('* as n').first()).to.deep.equal({
      n: 3,
    });
  });

  it('puts what came after a batch into the next period, starting where the last ended', async () => {
    await at(a.merchant.id).credit(4_000, 40);
    // same cut-off: the period is settled, the new credit waits for the next one
    expect(await settle(deps(), { now: tomorrow() })).to.deep.equal([]);
    const next = await settle(deps(), { now: tomorrow() + DAY });
    expect(next).to.have.length(1);
    expect(next[0]).to.include({
      currency: 'USD',
      environment: 'test',
      period_start: usd.period_end,
      period_end: usd.period_end + DAY,
      gross: 4_000,
      fees: 40,
      net: 3_960,
      count: 1,
    });
  });

  it('GET /v1/settlements lists the key environment’s batches newest first with cursor pagination', async () => {
    const all = await a.client.get('/v1/settlements');
    expect(all.status).to.equal(200);
    expect(all.body).to.include({ object: 'list', has_more: false, next_cursor: null });
    expect(all.body.data).to.have.length(3);
    const keys = all.body.data.map((s: any) => [s.created, s.id]);
    const sorted = [...keys].sort((x, y) => y[0] - x[0] || (y[1] < x[1] ? -1 : y[1] > x[1] ? 1 : 0));
    expect(keys).to.deep.equal(sorted);
    expect(all.body.data).to.deep.include(usd);

    const page1 = await a.client.get('/v1/settlements?limit=2');
    expect(page1.body.data).to.deep.equal(all.body.data.slice(0, 2));
    expect(page1.body.has_more).to.equal(true);
    expect(page1.body.next_cursor).to.equal(`${page1.body.data[1].created}.${page1.body.data[1].id}`);
    const page2 = await a.client.get(`/v1/settlements?limit=2&cursor=${encodeURIComponent(page1.body.next_cursor)}`);
    expect(page2.body).to.deep.equal({
      object: 'list',
      data: all.body.data.slice(2),
      has_more: false,
      next_cursor: null,
    });

    const live = await aLive.get('/v1/settlements');
    expect(live.body.data.map((s: any) => [s.environment, s.gross])).to.deep.equal([['live', 7_000]]);
  });

  it('GET /v1/settlements/{id} shows the batch to its merchant and environment only', async () => {
    const one = await a.client.get(`/v1/settlements/${usd.id}`);
    expect(one.status).to.equal(200);
    expect(one.body).to.deep.equal(usd);
    const liveId = (await aLive.get('/v1/settlements')).body.data[0].id;
    for (const [client, id] of [
      [b.client, usd.id],
      [a.client, liveId],
      [a.client, newId('settlement')],
      [a.client, 'stl_nope'],
      [a.client, usd.id.toUpperCase()],
    ] as const) {
      const res = await client.get(`/v1/settlements/${id}`);
      expect(res.status, id).to.equal(404);
      expect(res.body.error.code).to.equal('not-found');
    }
    const others = await b.client.get('/v1/settlements');
    expect(others.body.data).to.deep.equal([]);
  });

  it('answers 400 validation-failed to a bad limit, cursor or query field', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=-1', 'limit'],
      ['cursor=yesterday', 'cursor'],
      [`cursor=123.${newId('payment')}`, 'cursor'],
    ]) {
      const res = await a.client.get(`/v1/settlements?${query}`);
      expect(res.status, query).to.equal(400);
      expect(res.body.error, query).to.include({ code: 'validation-failed', param });
    }
    const extra = await a.client.get('/v1/settlements?status=paid');
    expect(extra.status).to.equal(400);
    expect(extra.body.error.code).to.equal('validation-failed');
  });

  it('the settlement pool settles what the last daily cut-off left, once, with two copies checking at the same moment', async () => {
    const c = await env.merchant({ scope: 'read' });
    await at(c.merchant.id).credit(8_000, 80);
    // the service's clock a day on: the credit is before the last daily cut-off (00:00 UTC) it sees
    env.clock.advance(DAY * 1000);
    // the two copies are made to run into each other: the test holds the settlements table until
    // both wait on a lock (one for the table, the other for the first copy's group lock), then
    // lets them go. A copy that did not wait for the other would read no batch and make a second
    // one, which the unique index refuses: its run fails, with an error in its log
    const hold = await db().transaction();
    let pools: RunningProcess[];
    try {
      await hold.raw('lock table settlements in access exclusive mode');
      pools = await Promise.all(
        [1, 2].map(() => env.spawn('workers/settlement/index.ts', { SETTLEMENT_CHECK_INTERVAL_MS: '100' })),
      );
      await waitingOnLocks(db(), 2);
    } finally {
      await hold.commit();
    }
    const list = await eventually(async () => {
      const res = await c.client.get('/v1/settlements');
      return res.body.data?.length ? res.body : undefined;
    });
    expect(list.data).to.have.length(1);
    expect(list.data[0]).to.include({
      currency: 'USD',
      gross: 8_000,
      fees: 80,
      net: 7_920,
      count: 1,
      period_end: lastCutoff(Math.floor(env.clock.now() / 1000), 0),
    });
    // a graceful stop lets each copy finish the run in hand: every line either would log is in
    for (const pool of pools) expect(await pool.stop(), 'exit code of a settlement pool').to.equal(0);
    expect(await db()('settlements').where({ merchant_id: c.merchant.id }).count('* as n').first()).to.deep.equal({
      n: 1,
    });
    expect(
      await db()('events').where({ merchant_id: c.merchant.id, type: 'settlement.completed' }).count('* as n').first(),
    ).to.deep.equal({ n: 1 });
    const covered = await db()('ledger_transactions').where({ merchant_id: c.merchant.id }).pluck('settlement_id');
    expect(covered).to.deep.equal([list.data[0].id]);
    for (const pool of pools)
      expect(
        pool.lines.filter((l) => typeof l === 'object' && l.level >= 50),
        'errors logged by a settlement pool',
      ).to.deep.equal([]);
  });
});
