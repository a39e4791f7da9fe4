import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { emitEvent, startReceiver, type Receiver } from '../helpers/webhooks';

describe('webhook sender killed mid-delivery', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let rx: Receiver;

  before(async () => {
    env = await startTestEnv({
      WEBHOOK_RETRY_DELAYS_MS: '100,100,100,100,100,100,100,100',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    rx = await startReceiver();
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  it('retries the delivery from another sender (the next attempt, same delivery id): nothing is lost', async () => {
    const { merchant } = await env.merchant();
    const hook = (
      await env.admin('POST', '/admin/webhooks', {
        merchant_id: merchant.id,
        url: `${rx.url}/crash`,
        events: ['payment.*'],
        environment: 'test',
      })
    ).body;
    // the first request is held open: the sender is killed while it waits for the answer
    rx.on('/crash', (_req, n) => (n === 1 ? { hang: true } : { status: 200 }));
    const first = await env.spawn('workers/webhook-sender/index.ts');
    const event = await emitEvent(env.services, merchant.id);
    const [held] = await rx.waitFor('/crash', 1);
    await first.kill();

    await env.spawn('workers/webhook-sender/index.ts');
    const got = await rx.waitFor('/crash', 2, 30_000);
    const id = String(held.headers['x-service-delivery-id']);
    expect(got[1].headers['x-service-delivery-id']).to.equal(id);
    expect(got[1].headers['x-service-delivery-attempt']).to.equal('2');
    const d = await eventually(async () => {
      const row = await env.services.db('webhook_deliveries').where({ id }).first();
      return row.status === 'succeeded' && row;
    });
    expect(d).to.include({ event_id: event.id, webhook_id: hook.id, attempts: 2, last_status_code: 200 });
    const attempts = await env.services.db('webhook_attempts').where({ delivery_id: id }).orderBy('attempt');
    expect(attempts.map((a) => [a.attempt, a.status_code, a.error])).to.deep.equal([
      [1, null, 'interrupted'],
      [2, 200, null],
    ]);
  });
});
