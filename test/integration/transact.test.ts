import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { transact } from '../../shared/db/transact';

/**
 * Two writers crossing on the same rows in opposite orders: Postgres kills one as a deadlock's
 * victim. transact() runs the victim again, so both complete and no caller sees the error (the
 * drill's POST /v1/payouts answered 500 on exactly this before).
 */
describe('transact: a deadlock victim is run again', () => {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv();
    await env.services.db.raw('create table crossing (id int primary key, n int not null)');
    await env.services.db('crossing').insert([
      { id: 1, n: 0 },
      { id: 2, n: 0 },
    ]);
  });
  after(async () => {
    await env.close();
  });

  it('both transactions commit once each; the victim ran twice', async () => {
    const deps = { db: env.services.db, outbox: env.services.outbox, clock: env.services.clock };
    const runs = { a: 0, b: 0 };
    let arrived = 0;
    let release!: () => void;
    const bothHoldTheirFirstRow = new Promise<void>((r) => (release = r));
    const writer = (name: 'a' | 'b', first: number, second: number) =>
      transact(deps, async (trx, outbox) => {
        runs[name]++;
        await trx('crossing').where({ id: first }).increment('n', 1);
        if (runs[name] === 1) {
          if (++arrived === 2) release();
          await bothHoldTheirFirstRow;
        }
        await trx('crossing').where({ id: second }).increment('n', 1);
        await outbox.add('refund', 'noop', { requestId: name });
      });
    await Promise.all([writer('a', 1, 2), writer('b', 2, 1)]);
    expect(runs.a + runs.b).to.equal(3);
    expect((await env.services.db('crossing').orderBy('id')).map((r) => r.n)).to.deep.equal([2, 2]);
    // one outbox row per committed transaction: the victim's first one rolled back with it
    expect(
      Number((await env.services.db('outbox').where({ job_name: 'noop' }).count<{ n: string }[]>('* as n'))[0].n),
    ).to.equal(2);
  });
});
