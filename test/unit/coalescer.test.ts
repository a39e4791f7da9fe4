import { expect } from 'chai';
import { Coalescer } from '../../shared/db/coalescer';

describe('Coalescer (group commit of concurrent calls)', () => {
  it('runs a lone call at once, and joins the calls that arrive while batches run', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const c = new Coalescer<number, number>(async (xs) => {
      batches.push(xs);
      await gate;
      return xs.map((x) => x * 10);
    }, 1);
    const first = c.call(1);
    const rest = [c.call(2), c.call(3), c.call(4)];
    expect(batches).to.deep.equal([[1]]);
    release();
    gate = Promise.resolve();
    expect(await first).to.equal(10);
    expect(await Promise.all(rest)).to.deep.equal([20, 30, 40]);
    expect(batches).to.deep.equal([[1], [2, 3, 4]]);
  });

  it('keeps up to maxInFlight batches running and caps batch size', async () => {
    const sizes: number[] = [];
    let running = 0;
    let most = 0;
    const c = new Coalescer<number, number>(
      async (xs) => {
        sizes.push(xs.length);
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return xs;
      },
      2,
      3,
    );
    const out = await Promise.all(Array.from({ length: 10 }, (_, i) => c.call(i)));
    expect(out).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(most).to.equal(2);
    expect(Math.max(...sizes)).to.be.at.most(3);
  });

  it('rejects every call of a failed batch, and carries on with the next', async () => {
    let fail = true;
    const c = new Coalescer<number, number>(async (xs) => {
      if (fail) throw new Error('database down');
      return xs;
    });
    const results = await Promise.allSettled([c.call(1), c.call(2)]);
    expect(results.every((r) => r.status === 'rejected')).to.equal(true);
    fail = false;
    expect(await c.call(3)).to.equal(3);
  });
});
