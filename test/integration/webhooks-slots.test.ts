import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { eventually } from '../../scripts/lib/processes';
import { EndpointSemaphore, HANDOFF_MS, type SlotGrant } from '../../shared/webhooks/semaphore';

/**
 * The per-endpoint bound on real Redis, each EndpointSemaphore standing for one sender process
 * (its own connection), as the sender uses it: acquire, attempt, release with the attempt's time.
 */
describe('per-endpoint slots shared by sender processes (real Redis)', () => {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const prefix = `{t${randomBytes(4).toString('hex')}}`;
  const clients: Redis[] = [];
  const redis = new Redis(url);
  let endpoints = 0;

  function senderProcess(limit: number, attemptLeaseMs = 15_000): EndpointSemaphore {
    const client = new Redis(url, { maxRetriesPerRequest: null });
    clients.push(client);
    return new EndpointSemaphore(client, prefix, limit, attemptLeaseMs);
  }
  const newEndpoint = () => `wh_slots${++endpoints}`;
  const key = (webhookId: string, part: 'holders' | 'waiters' | 'avg-ms') =>
    `${prefix}:{webhook-slots:${webhookId}}:${part}`;
  const holders = (webhookId: string) => redis.zrange(key(webhookId, 'holders'), '0', '-1');
  const waiting = (webhookId: string) => redis.zrange(key(webhookId, 'waiters'), '0', '-1');
  function slotOf(grant: SlotGrant) {
    if (!grant.ok) throw new Error(`no slot: wait ${grant.waitMs} ms`);
    return grant.slot;
  }

  after(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    await Promise.all([redis, ...clients].map((c) => c.quit()));
  });

  it('hands a freed slot to a job of the same process waiting for the endpoint, without giving it back to Redis in between', async () => {
    const sender = senderProcess(1);
    const wh = newEndpoint();
    const first = slotOf(await sender.acquire(wh, 'whd_1'));
    // the endpoint is full and fast (no attempt time yet): the next job waits in its process
    const next = sender.acquire(wh, 'whd_2');
    await eventually(async () => (await waiting(wh)).includes('whd_2'));
    await redis.set(key(wh, 'avg-ms'), '100');

    await sender.release(first, 10);
    const second = slotOf(await next);
    expect(second.token).to.equal(first.token);
    expect(await holders(wh)).to.deep.equal([first.token]);
    expect(await redis.get(key(wh, 'avg-ms')), 'nothing written to Redis on the hand-over').to.equal('100');

    // no job waits: the slot goes back, with the mean time of both attempts weighted as two
    await sender.release(second, 30);
    expect(await holders(wh)).to.deep.equal([]);
    expect(await waiting(wh), 'the job served by the hand-over no longer counts as waiting').to.deep.equal([]);
    expect(Number(await redis.get(key(wh, 'avg-ms')))).to.be.closeTo(100 * 0.64 + 20 * 0.36, 0.001);
  });

  it(`gives a slot taken ${HANDOFF_MS} ms ago or more back to Redis, where a waiting job takes a new one`, async () => {
    const sender = senderProcess(1);
    const wh = newEndpoint();
    const first = slotOf(await sender.acquire(wh, 'whd_1'));
    const next = sender.acquire(wh, 'whd_2');
    await eventually(async () => (await waiting(wh)).includes('whd_2'));
    (first as { takenAt: number }).takenAt -= HANDOFF_MS;

    await sender.release(first, 10);
    const second = slotOf(await next);
    expect(second.token).to.not.equal(first.token);
    expect(await holders(wh)).to.deep.equal([second.token]);
    await sender.release(second, 10);
  });

  it('bounds an endpoint across processes: another process waits (delayed at once when the endpoint is slow) until a slot is back in Redis', async () => {
    const one = senderProcess(1);
    const other = senderProcess(1);
    const wh = newEndpoint();
    const held = slotOf(await one.acquire(wh, 'whd_1'));

    await redis.set(key(wh, 'avg-ms'), '500');
    const slow = await other.acquire(wh, 'whd_2');
    expect(slow.ok).to.equal(false);
    if (!slow.ok) expect(slow.waitMs).to.be.within(375, 625);

    // fast again: the other process's job waits briefly, and takes the slot once it is back
    await redis.set(key(wh, 'avg-ms'), '5');
    const later = other.acquire(wh, 'whd_2');
    await one.release(held, 5);
    const taken = slotOf(await later);
    expect(await holders(wh)).to.deep.equal([taken.token]);
    await other.release(taken, 5);
  });

  it('drops the slot of a process that died holding it once the lease (attempt lease + hand-over time) is over', async () => {
    const dead = senderProcess(1, 100);
    const alive = senderProcess(1, 100);
    const wh = newEndpoint();
    slotOf(await dead.acquire(wh, 'whd_1'));
    await redis.set(key(wh, 'avg-ms'), '500');
    const refused = await alive.acquire(wh, 'whd_2');
    expect(refused.ok).to.equal(false);
    const grant = await eventually(
      async () => {
        const g = await alive.acquire(wh, 'whd_2');
        return g.ok && g;
      },
      10_000,
      100,
    );
    await alive.release(slotOf(grant), 5);
  });
});
