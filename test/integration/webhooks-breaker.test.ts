import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { emitEvent, startReceiver, type Receiver } from '../helpers/webhooks';

const PAUSE_MS = 4000;

describe('webhook circuit breaker and per-endpoint bound (real sender)', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let rx: Receiver;

  before(async () => {
    env = await startTestEnv({
      WEBHOOK_RETRY_DELAYS_MS: '200,200,200,200,200,200,200,200',
      WEBHOOK_TIMEOUT_MS: '3000',
      WEBHOOK_BREAKER_PAUSE_MS: String(PAUSE_MS),
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
    });
    rx = await startReceiver();
    await env.spawn('workers/webhook-sender/index.ts', { WEBHOOK_SENDER_CONCURRENCY: '10' });
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  async function endpoint(merchantId: string, path: string, events: string[]) {
    const res = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      url: rx.url + path,
      events,
      environment: 'test',
    });
    expect(res.status).to.equal(201);
    return res.body;
  }
  const db = () => env.services.db;

  it('opens after 20 consecutive failures, holds deliveries for the pause without spending attempts, and closes after one successful probe', async () => {
    const { merchant } = await env.merchant();
    const dead = await endpoint(merchant.id, '/down', ['payment.*']);
    const healthy = await endpoint(merchant.id, '/up', ['refund.*']);
    let up = false;
    rx.on('/down', () => ({ status: up ? 200 : 500 }));
    for (let i = 0; i < 25; i++) await emitEvent(env.services, merchant.id);

    const opened = await eventually(async () => {
      const w = (await env.admin('GET', `/admin/webhooks/${dead.id}`)).body;
      return w.breaker.state === 'open' && w;
    });
    expect(opened.breaker.consecutive_failures).to.be.at.least(20);

    // another endpoint of the same merchant is not held back while this one is open
    await emitEvent(env.services, merchant.id, { type: 'refund.succeeded' });
    await rx.waitFor('/up', 1);
    const row = await db()('webhooks').where({ id: dead.id }).first();
    const upAttempt = await db()('webhook_attempts as a')
      .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .where('d.webhook_id', healthy.id)
      .first('a.started_at');
    expect(upAttempt.started_at.getTime()).to.be.below(row.breaker_open_until.getTime());

    up = true;
    await eventually(async () => {
      const notSucceeded = await db()('webhook_deliveries')
        .where({ webhook_id: dead.id })
        .whereNot({ status: 'succeeded' });
      return notSucceeded.length === 0;
    }, 30_000);

    const closed = (await env.admin('GET', `/admin/webhooks/${dead.id}`)).body;
    expect(closed.breaker).to.include({ state: 'closed', consecutive_failures: 0 });

    const attempts = await db()('webhook_attempts as a')
      .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .where('d.webhook_id', dead.id)
      .orderBy('a.started_at')
      .select('a.*');
    const openedAt = row.breaker_opened_at.getTime();
    const openUntil = row.breaker_open_until.getTime();
    // nothing was attempted while open: the only attempts after the opening instant are those
    // claimed while the opening was being written: in flight then (the endpoint bound, 2), plus
    // the slots those freed before the coalesced outcome that opens the breaker committed (a slot
    // is handed over at once, its outcome written with the next group): at most twice the bound
    const duringPause = attempts.filter((a) => a.started_at.getTime() > openedAt && a.started_at.getTime() < openUntil);
    expect(duringPause.length).to.be.at.most(4);
    for (const a of duringPause) expect(a.started_at.getTime() - openedAt).to.be.below(PAUSE_MS / 4);
    // after the pause, exactly one probe went out alone; the others followed its success
    const afterPause = attempts.filter((a) => a.started_at.getTime() >= openUntil);
    const probe = afterPause[0];
    expect(probe.status_code).to.equal(200);
    expect(afterPause.filter((a) => a.started_at.getTime() <= probe.finished_at.getTime())).to.have.length(1);
    // no attempt was spent by waiting: every attempt recorded is one the endpoint received
    expect(attempts).to.have.length(rx.at('/down').length);
    const deliveries = await db()('webhook_deliveries').where({ webhook_id: dead.id });
    expect(deliveries).to.have.length(25);
    for (const d of deliveries) {
      expect(d.status).to.equal('succeeded');
      expect(d.attempts).to.equal(attempts.filter((a) => a.delivery_id === d.id).length);
    }
  });

  it('opens again for another pause when the probe fails', async () => {
    const { merchant } = await env.merchant();
    const hook = await endpoint(merchant.id, '/flaky', ['payment.*']);
    let up = false;
    rx.on('/flaky', () => ({ status: up ? 200 : 502 }));
    for (let i = 0; i < 21; i++) await emitEvent(env.services, merchant.id);
    const first = await eventually(async () => {
      const w = await db()('webhooks').where({ id: hook.id }).first();
      return w.breaker_open_until && w;
    });
    const received = () => rx.at('/flaky').length;
    // the probe after the first pause fails: the breaker opens again, from that failure
    const second = await eventually(async () => {
      const w = await db()('webhooks').where({ id: hook.id }).first();
      return w.breaker_open_until && w.breaker_open_until.getTime() > first.breaker_open_until.getTime() && w;
    }, 20_000);
    const probes = await db()('webhook_attempts as a')
      .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .where('d.webhook_id', hook.id)
      .where('a.started_at', '>=', first.breaker_open_until)
      .select('a.status_code');
    expect(probes.map((p) => p.status_code)).to.deep.equal([502]);
    expect(second.breaker_opened_at.getTime()).to.be.at.least(first.breaker_open_until.getTime());
    const before = received();
    up = true;
    await eventually(
      async () => (await db()('webhook_deliveries').where({ webhook_id: hook.id, status: 'pending' })).length === 0,
      30_000,
    );
    expect((await env.admin('GET', `/admin/webhooks/${hook.id}`)).body.breaker.state).to.equal('closed');
    expect(received()).to.be.above(before);
  });

  it('keeps at most the bound in flight to a hanging endpoint, while other endpoints are served', async () => {
    const { merchant } = await env.merchant();
    const stuck = await endpoint(merchant.id, '/stuck', ['payment.*']);
    await endpoint(merchant.id, '/fast', ['refund.*']);
    rx.on('/stuck', () => ({ hang: true }));
    for (let i = 0; i < 12; i++) await emitEvent(env.services, merchant.id);
    await rx.waitFor('/stuck', 2);
    for (let i = 0; i < 10; i++) await emitEvent(env.services, merchant.id, { type: 'refund.succeeded' });
    await rx.waitFor('/fast', 10);
    // the fast endpoint was served while the stuck one still had deliveries never attempted
    const untouched = await db()('webhook_deliveries').where({ webhook_id: stuck.id, attempts: 0 });
    expect(untouched.length).to.be.at.least(1);
    expect(rx.maxOpen.get('/stuck')).to.equal(2);
  });
});
