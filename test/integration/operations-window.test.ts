import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { ManualClock } from '../../shared/clock';
import { createContext, type ServiceContext } from '../../shared/context';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { sendOnce } from '../../shared/operations/send';
import { sweepOpen, MAX_ASK_INTERVAL_MS } from '../../shared/operations/sweep';
import { mobileMoneyPaymentKind } from '../../shared/payments/kind';
import { payoutKind } from '../../shared/payouts/kind';
import { openPastBound } from '../../shared/operations/attention';
import { createLogger } from '../../shared/logger';
import { callbackBody, aPayment, paymentCredits, sendCallback } from '../helpers/money';
import { KINDS } from '../../shared/kindRegistry';

/**
 * The end of a payment's provider window (docs/decisions.md#faults-and-limits): the service never
 * cancels a payment that the provider may still take from the client, and a success the provider
 * reports after a cancellation is taken. The provider is a loopback server whose answer the test
 * sets; time is a clock the test moves (no sleeping through windows).
 */
describe('the end of a provider window', () => {
  let env: TestEnv;
  let shop: MerchantFixture;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let provider: http.Server;
  /** what the provider answers about each payment: a status, or an HTTP error */
  const answers = new Map<string, { status: string } | { error: number }>();
  const pushes: string[] = [];

  before(async () => {
    provider = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const reply = (status: number, b: unknown) =>
          res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(b));
        if (req.method === 'POST') {
          const body = JSON.parse(raw);
          pushes.push(body.external_id);
          return reply(201, { provider_ref: `REF-${body.external_id.slice(4, 12)}`, status: 'pending' });
        }
        const id = decodeURIComponent(req.url!.split('/').pop()!);
        const a = answers.get(id);
        if (!a) return reply(404, { error: { code: 'not-found', message: 'unknown' } });
        if ('error' in a) return reply(a.error, { error: { code: 'down', message: 'provider down' } });
        reply(200, {
          kind: 'payment',
          external_id: id,
          provider_ref: `REF-${id.slice(4, 12)}`,
          status: a.status,
          failure_code: null,
          failure_message: null,
        });
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
    env = await startTestEnv({ SANDBOX_PROVIDER_URL: url, PROVIDER_TIMEOUT_MS: '500', ASK_INTERVAL_MS: '1000' });
    clock = new ManualClock();
    ctx = createContext({ role: 'worker', name: 'window-test', config: env.config, clock });
    shop = await env.merchant({ scope: 'payments' });
  });
  after(async () => {
    await ctx.close();
    await env.close();
    provider.closeAllConnections();
    await new Promise((r) => provider.close(r));
  });

  const row = (id: string) => env.services.db('payments').where({ id }).first();
  const history = async (id: string) =>
    (await env.services.db('payment_status_changes').where({ payment_id: id }).orderBy('id')).map(
      (h) => `${h.from_status ?? '∅'}→${h.to_status} (${h.reason})`,
    );
  const events = (id: string) => env.services.db('events').where({ object_id: id }).orderBy('created').pluck('type');
  /** Moves the clock past the payment's window (and past any backoff), then sweeps. */
  async function sweepAfter(ms: number) {
    clock.advance(ms);
    return sweepOpen(ctx, mobileMoneyPaymentKind);
  }
  async function aPaymentPastItsWindow() {
    const p = await aPayment(shop.client, { phone: '243990000001' });
    const { window_ends_at } = await row(p.id);
    if (clock.now() < window_ends_at.getTime() + 1) clock.advance(window_ends_at.getTime() + 1 - clock.now());
    return p;
  }

  it('a payment the provider still reports pending stays processing and is asked again, with backoff, until its outcome', async () => {
    const p = await aPaymentPastItsWindow();
    answers.set(p.id, { status: 'pending' });
    expect(await sweepAfter(0)).to.deep.equal({ deferred: 1 });
    expect((await row(p.id)).status).to.equal('processing');
    // asked again only after the backoff: ASK_INTERVAL_MS, then twice that, ...
    expect(await sweepAfter(500)).to.deep.equal({});
    expect(await sweepAfter(600)).to.deep.equal({ deferred: 1 });
    expect(await sweepAfter(1500)).to.deep.equal({});
    expect(await sweepAfter(600)).to.deep.equal({ deferred: 1 });
    expect((await row(p.id)).asks).to.equal(3);
    // the client approves late: the next ask finds the success
    answers.set(p.id, { status: 'succeeded' });
    expect(await sweepAfter(MAX_ASK_INTERVAL_MS + 1)).to.deep.equal({ succeeded: 1 });
    expect(await history(p.id)).to.deep.equal(['∅→processing (created)', 'processing→succeeded (provider-asked)']);
    expect(await events(p.id)).to.deep.equal(['payment.succeeded']);
    expect(await paymentCredits(env, p.id)).to.have.length(1);
  });

  it('a provider that cannot be reached never gets its payment cancelled, however long it lasts', async () => {
    const p = await aPaymentPastItsWindow();
    answers.set(p.id, { error: 503 });
    expect(await sweepAfter(0)).to.deep.equal({ deferred: 1 });
    // two hours on, asked every 5 minutes at most: still processing
    for (let i = 0; i < 24; i++) await sweepAfter(MAX_ASK_INTERVAL_MS + 1);
    const r = await row(p.id);
    expect(r).to.include({ status: 'processing', completed: null });
    expect(r.asks).to.equal(25);
    expect(await events(p.id)).to.deep.equal([]);
    // back, with its word: the payment was cancelled on its side
    answers.set(p.id, { status: 'cancelled' });
    expect(await sweepAfter(MAX_ASK_INTERVAL_MS + 1)).to.deep.equal({ cancelled: 1 });
    expect(await history(p.id)).to.deep.equal(['∅→processing (created)', 'processing→cancelled (provider-asked)']);
  });

  it('what stays open an hour past its window is listed by GET /admin/attention and counted in /metrics', async () => {
    const p = await aPayment(shop.client, { phone: '243990000001' });
    const fresh = await aPayment(shop.client, { phone: '243990000001' });
    // its window ended two hours ago (its own row moved back: the service's clock moved on would
    // take the fresh one past its window too)
    await env.services
      .db('payments')
      .where({ id: p.id })
      .update({ window_ends_at: new Date(Date.now() - 2 * 3600_000) });
    const res = await env.admin('GET', '/admin/attention');
    expect(res.status).to.equal(200);
    const ids = res.body.data.map((i: any) => i.id);
    expect(ids).to.include(p.id);
    expect(ids).not.to.include(fresh.id);
    const item = res.body.data.find((i: any) => i.id === p.id);
    expect(item).to.include({ object: 'payment', status: 'processing', environment: 'test' });
    expect(item).to.include({ reason: 'open-past-bound' });
    expect(item).to.have.all.keys(
      'reason',
      'object',
      'id',
      'status',
      'merchant_id',
      'environment',
      'provider',
      'window_ends_at',
      'last_asked',
      'asks',
    );
    const metrics = await env.admin('GET', '/metrics');
    expect(metrics.body).to.match(/operations_open_past_bound\{kind="payment"\} [1-9]/);
    expect(metrics.body).to.match(/operations_open_past_bound\{kind="refund"\} 0/);
    // decided, it leaves the list
    answers.set(p.id, { status: 'failed' });
    await sweepAfter(MAX_ASK_INTERVAL_MS + 1);
    const after = await env.admin('GET', '/admin/attention');
    expect(after.body.data.map((i: any) => i.id)).not.to.include(p.id);
    answers.set(fresh.id, { status: 'expired' });
    await sweepAfter(MAX_ASK_INTERVAL_MS + 1);
  });

  it('a payment the provider reports expired, or does not know, is cancelled with payment.cancelled', async () => {
    const expired = await aPaymentPastItsWindow();
    const unknown = await aPaymentPastItsWindow();
    answers.set(expired.id, { status: 'expired' });
    expect(await sweepAfter(MAX_ASK_INTERVAL_MS + 1)).to.deep.equal({ cancelled: 2 });
    for (const p of [expired, unknown]) {
      expect(await history(p.id)).to.deep.equal([
        '∅→processing (created)',
        'processing→cancelled (provider-window-expired)',
      ]);
      expect(await events(p.id)).to.deep.equal(['payment.cancelled']);
      expect((await row(p.id)).failure_code).to.equal(null);
    }
  });

  it('a success reported after the cancellation is taken: succeeded (late-success), credited once, payment.succeeded', async () => {
    const p = await aPaymentPastItsWindow();
    answers.set(p.id, { status: 'expired' });
    await sweepAfter(MAX_ASK_INTERVAL_MS + 1);
    expect((await row(p.id)).status).to.equal('cancelled');

    const raw = callbackBody({ external_id: p.id, status: 'succeeded', provider_ref: 'REF-LATE' });
    expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', raw)).status).to.equal(200);
    const [cb] = await env.services.db('provider_callbacks').where({ object_id: p.id });
    expect((await applyStoredCallback(ctx, KINDS, cb.id)).outcome).to.equal('applied');
    // the same callback again changes nothing
    const again = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw);
    expect(again.status).to.equal(200);
    const second = (await env.services.db('provider_callbacks').where({ object_id: p.id }).orderBy('received_at'))[1];
    expect((await applyStoredCallback(ctx, KINDS, second.id)).outcome).to.equal('duplicate');

    const r = await row(p.id);
    expect(r).to.include({ status: 'succeeded', failure_code: null });
    expect(r.completed).to.be.a('number');
    expect(await history(p.id)).to.deep.equal([
      '∅→processing (created)',
      'processing→cancelled (provider-window-expired)',
      'cancelled→succeeded (late-success)',
    ]);
    expect(await events(p.id)).to.deep.equal(['payment.cancelled', 'payment.succeeded']);
    expect(await paymentCredits(env, p.id)).to.have.length(1);
    // a late failure after that success changes nothing
    const late = callbackBody({ external_id: p.id, status: 'failed', failure_code: 'client-refused' });
    await sendCallback(env.baseUrl, 'vodacom-sandbox', late);
    const third = (await env.services.db('provider_callbacks').where({ object_id: p.id }).orderBy('received_at'))[2];
    expect((await applyStoredCallback(ctx, KINDS, third.id)).outcome).to.equal('ignored-late');
    expect((await row(p.id)).status).to.equal('succeeded');
  });

  it('a success reported after the provider said failed is taken: succeeded (late-success), credited once, payment.succeeded, listed for review', async () => {
    const p = await aPayment(shop.client, { phone: '243990000001' });
    const failed = callbackBody({ external_id: p.id, status: 'failed', failure_code: 'insufficient-funds' });
    expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', failed)).status).to.equal(200);
    const [first] = await env.services.db('provider_callbacks').where({ object_id: p.id });
    expect((await applyStoredCallback(ctx, KINDS, first.id)).outcome).to.equal('applied');
    expect(await row(p.id)).to.include({ status: 'failed', failure_code: 'insufficient-funds' });
    const before = await env.admin('GET', '/admin/attention');
    expect(before.body.data.map((i: any) => i.id)).not.to.include(p.id);

    // the same provider now says the money moved: it contradicts itself, and the money is real
    const succeeded = callbackBody({ external_id: p.id, status: 'succeeded', provider_ref: 'REF-AFTER-FAIL' });
    expect((await sendCallback(env.baseUrl, 'vodacom-sandbox', succeeded)).status).to.equal(200);
    const second = (await env.services.db('provider_callbacks').where({ object_id: p.id }).orderBy('received_at'))[1];
    // the job names its kind, as the reconciler's jobs do: the one-statement path decides the same
    expect((await applyStoredCallback(ctx, KINDS, second.id, ctx.log, 'payment')).outcome).to.equal('applied');
    const r = await row(p.id);
    expect(r).to.include({ status: 'succeeded', failure_code: null, failure_message: null });
    expect(await history(p.id)).to.deep.equal([
      '∅→processing (created)',
      'processing→failed (provider-callback)',
      'failed→succeeded (late-success)',
    ]);
    expect(await events(p.id)).to.deep.equal(['payment.failed', 'payment.succeeded']);
    expect(await paymentCredits(env, p.id)).to.have.length(1);
    const view = await shop.client.get(`/v1/payments/${p.id}`);
    expect(view.body).to.include({ status: 'succeeded', failure_code: null });
    const listed = await env.admin('GET', '/admin/attention');
    const item = listed.body.data.find((i: any) => i.id === p.id);
    expect(item).to.include({ reason: 'late-success', object: 'payment', status: 'succeeded' });
    // reported again: a duplicate, credited still once
    await sendCallback(env.baseUrl, 'vodacom-sandbox', succeeded);
    const third = (await env.services.db('provider_callbacks').where({ object_id: p.id }).orderBy('received_at'))[2];
    expect((await applyStoredCallback(ctx, KINDS, third.id)).outcome).to.equal('duplicate');
    expect(await paymentCredits(env, p.id)).to.have.length(1);
  });

  it('a payment whose window has ended is never pushed to the client', async () => {
    const p = await aPaymentPastItsWindow();
    expect(await sendOnce(ctx, mobileMoneyPaymentKind, p.id, ctx.log)).to.equal('not-open');
    expect(pushes).not.to.include(p.id);
    expect((await row(p.id)).sent_at).to.equal(null);
    // while its window is open, the same job sends it once
    const fresh = await aPayment(shop.client, { phone: '243990000001' });
    const now = new ManualClock(Date.now());
    const open = createContext({ role: 'worker', name: 'window-test-open', config: env.config, clock: now });
    try {
      expect(await sendOnce(open, mobileMoneyPaymentKind, fresh.id, open.log)).to.equal('sent');
      expect(await sendOnce(open, mobileMoneyPaymentKind, fresh.id, open.log)).to.equal('already-sent');
    } finally {
      await open.close();
    }
    expect(pushes.filter((id) => id === fresh.id)).to.have.length(1);
  });
});

describe('money out the provider forgets', () => {
  let env: TestEnv;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let provider: http.Server;
  let down = false;

  before(async () => {
    // accepts every request; asked about one, answers pending until it is down
    provider = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const reply = (status: number, b: unknown) =>
          res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(b));
        if (req.method === 'POST')
          return reply(201, { provider_ref: `REF-${JSON.parse(raw).external_id.slice(4, 12)}`, status: 'pending' });
        if (down) return reply(503, { error: { code: 'down', message: 'provider down' } });
        const id = decodeURIComponent(req.url!.split('/').pop()!);
        const kind = id.startsWith('pay_') ? 'payment' : 'payout';
        reply(200, {
          kind,
          external_id: id,
          provider_ref: `REF-${id.slice(4, 12)}`,
          status: kind === 'payment' ? 'succeeded' : 'pending',
          failure_code: null,
          failure_message: null,
        });
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    env = await startTestEnv({
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${(provider.address() as AddressInfo).port}`,
      PROVIDER_TIMEOUT_MS: '500',
      ASK_INTERVAL_MS: '1000',
    });
    clock = new ManualClock();
    ctx = createContext({ role: 'worker', name: 'money-out-test', config: env.config, clock });
  });
  after(async () => {
    await ctx.close();
    await env.close();
    provider.closeAllConnections();
    await new Promise((r) => provider.close(r));
  });

  it('a payout open past its bound is logged once an hour, not at every ask', async () => {
    const { client } = await env.merchant({ scope: 'full' });
    // money to pay out: a payment the provider reports succeeded at the end of its window
    const p = await aPayment(client, { phone: '243990000001' });
    clock.advance(env.config.providerWindowMs.test + 1000);
    expect(await sweepOpen(ctx, mobileMoneyPaymentKind)).to.deep.equal({ succeeded: 1 });
    const res = await client.post('/v1/payouts', {
      amount: 1_000,
      currency: 'USD',
      operator: 'vodacom',
      phone: '243990000001',
      reference: `po-${p.id}`,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const id = res.body.id;
    expect(await sendOnce(ctx, payoutKind, id, ctx.log)).to.equal('sent');
    const { window_ends_at } = await env.services.db('payouts').where({ id }).first();

    const lines: any[] = [];
    const log = createLogger('info', 'capture', { write: (s: string) => void lines.push(JSON.parse(s)) });
    const hourly = () => lines.filter((l) => /an hour or more past its window/.test(l.msg));
    const perAsk = () => lines.filter((l) => /will ask again/.test(l.msg));
    // the provider answers pending for the first half hour, then cannot be reached at all
    clock.advance(window_ends_at.getTime() + 1 - clock.now());
    let asks = 0;
    // four hours of asks, one every 5 minutes (the longest backoff)
    for (let k = 0; k < 48; k++) {
      down = clock.now() > window_ends_at.getTime() + 1800_000;
      asks += (await sweepOpen(ctx, payoutKind, log)).deferred ?? 0;
      clock.advance(MAX_ASK_INTERVAL_MS + 1);
    }
    expect(asks).to.equal(48);
    expect((await env.services.db('payouts').where({ id }).first()).status).to.equal('processing');
    // a warning at each ask while the provider cannot be reached, until the bound (an hour past the window)
    expect(perAsk()).to.have.length(6);
    // then one line an hour: in the first, second and third hour past the bound
    expect(hourly().map((l) => l.hoursPastWindow)).to.deep.equal([1, 2, 3]);
    expect(hourly()[0]).to.include({
      kind: 'payout',
      id,
      status: 'processing',
      providerAnswer: 'provider-unreachable',
      level: 50,
    });
    // it is listed for an operator meanwhile
    expect((await openPastBound(env.services.db, KINDS, clock.now())).map((i) => i.id)).to.include(id);
  });
});
