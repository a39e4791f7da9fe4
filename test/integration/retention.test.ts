import { expect } from 'chai';
import type { TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { aMerchant, aPayment, startMoneyEnv, waitForStatus } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { purgeCallbackBodies } from '../../shared/retention';
import type { MerchantFixture } from '../helpers/env';

/**
 * Retention (docs/retention.md#purged): the pools that own log-like rows purge them past 90 days, on the
 * service clock, which this file moves; transactions are never touched. Real processes: the
 * sandbox provider, provider-push and callback-reconciler (callback bodies), webhook-sender
 * (attempt snippets) and outbox-relay (idempotency records, request signatures).
 */
const DAY = 24 * 3600 * 1000;

describe('retention: log-like rows purged after 90 days by their pools, transactions kept', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let rx: Receiver;
  let shop: MerchantFixture;
  const older: string[] = [];
  const younger: string[] = [];

  const db = () => env.services.db;
  const callbacks = (ids: string[]) => db()('provider_callbacks').whereIn('object_id', ids).orderBy('id');
  const attempts = (ids: string[]) =>
    db()('webhook_attempts as a')
      .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .join('events as e', 'e.id', 'd.event_id')
      .whereIn('e.object_id', ids)
      .orderBy('a.id')
      .select('a.*');
  const count = async (table: string) => Number((await db()(table).count<{ c: string }[]>('* as c'))[0].c);
  /** every transaction row, whole: payments, their history, the ledger, events */
  const transactions = async () => {
    const out: Record<string, unknown[]> = {};
    for (const t of ['payments', 'payment_status_changes', 'ledger_transactions', 'ledger_entries', 'events'])
      out[t] = await db()(t).orderByRaw('1');
    return out;
  };
  /** the callbacks' normalised columns: everything but the raw body */
  const normalised = async (ids: string[]) => (await callbacks(ids)).map(({ raw_body: _, ...rest }) => rest);

  /** Payments that succeeded through the sandbox's callbacks and whose payment.succeeded was delivered (each signed, with an Idempotency-Key). */
  async function somePayments(into: string[]) {
    const made = [await aPayment(shop.client), await aPayment(shop.client), await aPayment(shop.client)];
    for (const p of made) await waitForStatus(shop.client, p.id, 'succeeded');
    into.push(...made.map((p) => p.id));
    await eventually(async () => {
      const rows = await callbacks(into);
      const tries = await attempts(into);
      return (
        rows.length >= into.length &&
        rows.every((r) => r.processed_at) &&
        tries.length >= into.length &&
        tries.every((a) => a.finished_at && a.response_excerpt)
      );
    }, 20_000);
  }

  before(async () => {
    env = await startMoneyEnv({ RETENTION_INTERVAL_MS: '200' }, [
      'workers/provider-push/index.ts',
      'workers/callback-reconciler/index.ts',
      'workers/webhook-sender/index.ts',
      'workers/outbox-relay/index.ts',
    ]);
    rx = await startReceiver();
    shop = await aMerchant(env);
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: shop.merchant.id,
      url: `${rx.url}/hooks`,
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    await somePayments(older);
    // a gap between the two sets, in Postgres's time (received_at, started_at): the cutoff is put in its middle
    await new Promise((r) => setTimeout(r, 3000));
    await somePayments(younger);
  });
  after(async () => {
    await rx?.close();
    await env?.close();
  });

  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let kept: Awaited<ReturnType<typeof transactions>>;
  let keptNormalised: unknown[];

  it('keeps everything younger than its retention: fresh rows survive the pools’ purges', async () => {
    expect(await count('idempotency_keys'), 'the payment requests left idempotency records').to.be.greaterThan(0);
    expect(await count('request_signatures'), 'and their signatures').to.be.greaterThan(0);
    await wait(1500); // several purge runs of every pool
    expect(await count('idempotency_keys')).to.be.greaterThan(0);
    expect(await count('request_signatures')).to.be.greaterThan(0);
    const all = [...older, ...younger];
    expect((await callbacks(all)).every((c) => c.raw_body.length > 0)).to.equal(true);
    expect((await attempts(all)).every((a) => a.response_excerpt)).to.equal(true);
    kept = await transactions();
    keptNormalised = await normalised(all);
    expect(kept.payments).to.have.length(6);
    expect(kept.ledger_entries.length).to.be.greaterThan(0);
  });

  it('purges idempotency records once expired (24 h) and request signatures once out of tolerance, not before', async () => {
    env.clock.advance(23 * 3600 * 1000);
    await eventually(async () => (await count('request_signatures')) === 0, 10_000);
    await wait(1000);
    expect(await count('idempotency_keys'), 'idempotency records live 24 h').to.be.greaterThan(0);
    env.clock.advance(2 * 3600 * 1000);
    await eventually(async () => (await count('idempotency_keys')) === 0, 10_000);
  });

  it('a purge statement touches at most its batch, and skips a row another transaction holds instead of waiting', async () => {
    const lastOld = (await db()('provider_callbacks').whereIn('object_id', older).max('received_at as m'))[0].m as Date;
    const now = lastOld.getTime() + 90 * DAY + 500;
    const bodies = async () => (await callbacks(older)).filter((c) => c.raw_body === '').length;
    expect(await purgeCallbackBodies(db(), { now, batch: 1, maxBatches: 1 })).to.equal(1);
    expect(await bodies()).to.equal(1);
    // a transaction holds every other old callback: the purge neither waits nor touches them
    const trx = await db().transaction();
    try {
      await trx.raw(`select id from provider_callbacks where object_id = any(?) and raw_body <> '' for update`, [
        older,
      ]);
      const started = Date.now();
      expect(await purgeCallbackBodies(db(), { now })).to.equal(0);
      expect(Date.now() - started).to.be.lessThan(2000);
    } finally {
      await trx.rollback();
    }
    expect(await bodies()).to.equal(1);
  });

  it('past 90 days, the pools empty the raw callback bodies and null the attempt snippets of the older rows only', async () => {
    const lastOld = Math.max(
      ...(await callbacks(older)).map((c) => new Date(c.received_at).getTime()),
      ...(await attempts(older)).map((a) => new Date(a.started_at).getTime()),
    );
    const firstYoung = Math.min(
      ...(await callbacks(younger)).map((c) => new Date(c.received_at).getTime()),
      ...(await attempts(younger)).map((a) => new Date(a.started_at).getTime()),
    );
    expect(firstYoung - lastOld, 'the two sets are apart in time').to.be.greaterThan(1500);
    // the service's now: 90 days after the middle of the gap
    env.clock.advance((lastOld + firstYoung) / 2 + 90 * DAY - env.clock.now());
    await eventually(
      async () =>
        (await callbacks(older)).every((c) => c.raw_body === '') &&
        (await attempts(older)).every((a) => a.response_excerpt === null),
      10_000,
    );
    await wait(1000);
    expect(
      (await callbacks(younger)).every((c) => c.raw_body.length > 0),
      'younger than 90 days: bodies kept',
    ).to.equal(true);
    expect(
      (await attempts(younger)).every((a) => a.response_excerpt),
      'younger than 90 days: snippets kept',
    ).to.equal(true);

    env.clock.advance(DAY);
    await eventually(
      async () =>
        (await callbacks(younger)).every((c) => c.raw_body === '') &&
        (await attempts(younger)).every((a) => a.response_excerpt === null),
      10_000,
    );
    // the attempts themselves stay (status, latency, error): only the snippet goes
    expect((await attempts([...older, ...younger])).every((a) => a.status_code === 200 && a.finished_at)).to.equal(
      true,
    );
  });

  it('never touches transactions: payments, their history, the ledger and events are as they were, and the callbacks keep their normalised columns', async () => {
    expect(await transactions()).to.deep.equal(kept);
    expect(await normalised([...older, ...younger])).to.deep.equal(keptNormalised);
  });
});
