import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { clusterDown, clusterUp, topologyAt, topologyEnv, type Topology } from '../../scripts/cluster';
import { portOpen } from '../../scripts/local-services';
import { ConfigError, loadConfig } from '../../shared/config';
import { checkDeployment } from '../../shared/deployment';
import { createCardPayment, pay, paymentRow, tokenFor, waitForRow } from '../helpers/cards';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { freePort } from '../../scripts/lib/ports';
import { aMerchant, aPayment, balanceOf, POOLS, startSandbox, waitForStatus } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhooks';

/**
 * The money flows on the distributed topology (docs/operating.md#scaling): a Redis Cluster of 3 masters and 3
 * replicas and PgBouncer in transaction pooling, from Debian's packages (`npm run cluster:up`
 * starts the same on its own ports), with real worker processes. A mobile-money payment reaches
 * `succeeded` with its webhook, a refund and a payout succeed, a card payment passes 3-D Secure;
 * the queues' keys spread over the masters; bad configurations are refused at start.
 */
describe('on a Redis Cluster and PgBouncer (real workers)', function () {
  this.timeout(180_000);
  let topology: Topology;
  let env: TestEnv;
  let receiver: Receiver;
  let vaultUrl: string;

  /** Seven consecutive free ports for the topology. */
  async function freeBase(): Promise<number> {
    for (let base = 17_100 + (process.pid % 40) * 20; base < 19_000; base += 20) {
      const taken = await Promise.all(Array.from({ length: 7 }, (_, i) => portOpen(base + i)));
      if (!taken.some(Boolean)) return base;
    }
    throw new Error('no seven free ports for the topology');
  }

  before(async function () {
    topology = topologyAt(await freeBase());
    await clusterUp(topology);
    const [sandboxPort, vaultPort, acquirerPort] = [await freePort(), await freePort(), await freePort()];
    vaultUrl = `http://127.0.0.1:${vaultPort}`;
    const { REDIS_URL, DB_PREPARED_STATEMENTS } = topologyEnv(topology, 'unused');
    env = await startTestEnv(
      {
        REDIS_URL,
        DB_PREPARED_STATEMENTS,
        // no hash tag of its own: every queue takes its own ({queue})
        QUEUE_PREFIX: `tc${randomBytes(3).toString('hex')}`,
        SANDBOX_PROVIDER_PORT: String(sandboxPort),
        SANDBOX_PROVIDER_URL: `http://127.0.0.1:${sandboxPort}`,
        SANDBOX_CALLBACK_DELAY_MS: '150',
        CARD_VAULT_PORT: String(vaultPort),
        CARD_VAULT_URL: vaultUrl,
        CARD_PROVIDER_PORT: String(acquirerPort),
        CARD_PROVIDER_URL: `http://127.0.0.1:${acquirerPort}`,
        CARD_SANDBOX_CALLBACK_DELAY_MS: '50',
        RATE_LIMIT_PER_MINUTE: '100000',
        ASK_INTERVAL_MS: '200',
      },
      {},
      { databaseThrough: topology.pgbouncerPort },
    );
    await startSandbox(env, { SANDBOX_PROVIDER_PORT: String(sandboxPort) });
    await Promise.all(
      [
        ...POOLS,
        'workers/webhook-sender/index.ts',
        'workers/outbox-relay/index.ts',
        'workers/card-charge/index.ts',
        'shared/cards/sandbox/vaultServer.ts',
        'shared/cards/sandbox/acquirerServer.ts',
      ].map((entry) => env.spawn(entry)),
    );
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver?.close();
    await env?.close();
    if (topology) await clusterDown(topology);
  });

  it('runs a payment to succeeded with its webhook, a refund, a payout and a 3-D Secure card payment, every process through PgBouncer and the cluster', async () => {
    const shop = await aMerchant(env);
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: shop.merchant.id,
      url: `${receiver.url}/hook`,
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);

    const p = await aPayment(shop.client, { phone: '243990000001', amount: 10_000 });
    await waitForStatus(shop.client, p.id, 'succeeded', 30_000);
    const [delivery] = await receiver.waitFor('/hook', 1, 30_000);
    expect(JSON.parse(delivery.raw.toString())).to.deep.include({ type: 'payment.succeeded' });
    expect(JSON.parse(delivery.raw.toString()).data.object.id).to.equal(p.id);

    const refund = await shop.client.post(`/v1/payments/${p.id}/refund`, { amount: 1_000 });
    expect(refund.status, refund.text).to.equal(201);
    const payout = await shop.client.post(
      '/v1/payouts',
      {
        amount: 2_000,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `po-${randomUUID()}`,
      },
      { idempotencyKey: randomUUID() },
    );
    expect(payout.status, payout.text).to.equal(201);
    const finalOf = async (path: string) => {
      for (let i = 0; i < 150; i++) {
        const body = (await shop.client.get(path)).body;
        if (body.status === 'succeeded') return body;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`${path} did not succeed`);
    };
    await finalOf(`/v1/payouts/${payout.body.id}`);
    const refunds = await shop.client.get(`/v1/payments/${p.id}/refunds`);
    expect(refunds.body.data).to.have.length(1);
    for (
      let i = 0;
      i < 150 && (await shop.client.get(`/v1/payments/${p.id}/refunds`)).body.data[0].status !== 'succeeded';
      i++
    )
      await new Promise((r) => setTimeout(r, 200));
    expect((await shop.client.get(`/v1/payments/${p.id}/refunds`)).body.data[0].status).to.equal('succeeded');
    expect((await balanceOf(shop.client)).available.USD).to.equal(10_000 - 1_000 - 2_000);

    const card = await createCardPayment(shop.client);
    const { token } = await tokenFor(vaultUrl, card.id, '4000000000003220');
    expect((await pay(env.baseUrl, card.id, { token }, { 'X-Forwarded-For': '198.51.100.7' })).status).to.equal(202);
    const challenged = await waitForRow(env, card.id, (r) => r.status === 'processing', 30_000);
    const answered = await fetch(`${challenged.challenge_url}/complete`, { method: 'POST', redirect: 'manual' });
    expect(answered.status).to.equal(303);
    await waitForRow(env, card.id, (r) => r.status === 'succeeded', 30_000);
    expect((await paymentRow(env, card.id)).card).to.include({ last4: '3220' });
  });

  it('spreads the queues over the masters: each queue in its own slot, keys on more than one master', async () => {
    const masters: number[] = [];
    for (const port of topology.redisPorts) {
      const node = new Redis({ port, lazyConnect: true });
      await node.connect();
      const role = ((await node.call('ROLE')) as [string])[0];
      if (role === 'master' && (await node.keys(`${env.config.queuePrefix}:*`)).length > 0) masters.push(port);
      node.disconnect();
    }
    expect(masters.length, 'masters holding queue keys').to.be.at.least(2);
  });

  it('serves Bull Board against the cluster: every queue listed with its counts', async () => {
    const res = await env.admin('GET', '/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10');
    expect(res.status).to.equal(200);
    const queues: { name: string; counts: Record<string, number> }[] = res.body.queues;
    expect(queues.map((q) => q.name).sort()).to.deep.equal([
      'callback-reconciler',
      'card-charge',
      'payout',
      'provider-push',
      'refund',
      'webhook-sender',
    ]);
    expect(queues.find((q) => q.name === 'provider-push')!.counts.completed).to.be.at.least(1);
  });

  it('refuses bad configurations at start: prepared statements behind PgBouncer, a cluster node down, a hash-tagged prefix', async () => {
    const base = { ...env.processEnv };
    await checkDeployment(loadConfig(base));
    const prepared = loadConfig({ ...base, DB_PREPARED_STATEMENTS: 'true' });
    await expectRefusal(checkDeployment(prepared), /PgBouncer.*DB_PREPARED_STATEMENTS=false/);
    const down = await freePort();
    const oneDown = loadConfig({ ...base, REDIS_URL: `${base.REDIS_URL},127.0.0.1:${down}` });
    await expectRefusal(checkDeployment(oneDown), new RegExp(`127.0.0.1:${down}, which does not answer`));
    expect(() => loadConfig({ ...base, QUEUE_PREFIX: '{svc}' })).to.throw(ConfigError, /hash tag/);
  });
});

async function expectRefusal(p: Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.match(message);
    return;
  }
  expect.fail(`expected a refusal matching ${message}`);
}
