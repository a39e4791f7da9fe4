import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import { TtlCache } from '../../shared/ttlCache';

describe('TtlCache', () => {
  const counting = () => {
    const calls: string[] = [];
    const load =
      (key: string, value = `v-${key}`) =>
      () => {
        calls.push(key);
        return Promise.resolve(value);
      };
    return { calls, load };
  };

  it('loads a key once within the TTL, and again after it', async () => {
    const clock = new ManualClock();
    const cache = new TtlCache<string>(40, undefined, clock);
    const { calls, load } = counting();
    expect(await cache.get('a', load('a'))).to.equal('v-a');
    clock.advance(39);
    expect(await cache.get('a', load('a', 'other'))).to.equal('v-a');
    expect(calls).to.deep.equal(['a']);
    clock.advance(1);
    expect(await cache.get('a', load('a', 'fresh'))).to.equal('fresh');
    expect(calls).to.deep.equal(['a', 'a']);
  });

  it('shares one load between concurrent misses', async () => {
    const cache = new TtlCache<string>(1000);
    const { calls, load } = counting();
    const values = await Promise.all([1, 2, 3].map(() => cache.get('k', load('k'))));
    expect(values).to.deep.equal(['v-k', 'v-k', 'v-k']);
    expect(calls).to.have.length(1);
  });

  it('does not remember a failed load', async () => {
    const cache = new TtlCache<string>(1000);
    const failed = await cache.get('k', () => Promise.reject(new Error('db down'))).catch((e: Error) => e.message);
    expect(failed).to.equal('db down');
    await new Promise((r) => setImmediate(r));
    expect(await cache.get('k', () => Promise.resolve('back'))).to.equal('back');
  });

  it('keeps nothing with a TTL of 0, and drops the oldest key beyond its size', async () => {
    const off = new TtlCache<string>(0);
    const { calls, load } = counting();
    await off.get('a', load('a'));
    await off.get('a', load('a'));
    expect(calls).to.deep.equal(['a', 'a']);

    const small = new TtlCache<string>(1000, 2);
    const c2 = counting();
    for (const k of ['a', 'b', 'c', 'a']) await small.get(k, c2.load(k));
    expect(c2.calls, 'a was evicted by c').to.deep.equal(['a', 'b', 'c', 'a']);
    await small.get('c', c2.load('c'));
    expect(c2.calls).to.have.length(4);
  });
});
