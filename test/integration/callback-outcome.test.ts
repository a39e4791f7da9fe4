import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../shared/db/knex';
import { runSql, sqlStatement } from '../../shared/db/sql/run';
import { callbackAppliedSql, callbackUnprocessedSql } from '../../shared/providers/callbackOutcome';
import { ownDatabase } from '../helpers/own-database';

/** shared/providers/callbackOutcome.ts on a real database: a callback is applied at most once. */
describe('the callback outcome part, on Postgres', () => {
  let db: Db;
  ownDatabase((d) => (db = d));
  // `m` as the writer's: the rows it wrote, each with the callback it carries
  const apply = sqlStatement(
    'callback-outcome-test-apply',
    `with m as (select * from json_to_recordset($1::json) as m(id text, callback_id uuid)),
          c as (${callbackAppliedSql('m')} returning pc.id)
     select id from c`,
  );
  const unprocessed = sqlStatement(
    'callback-outcome-test-unprocessed',
    `select ${callbackUnprocessedSql('$1::uuid')} as free`,
  );

  const callback = (processed: boolean) => ({
    id: randomUUID(),
    provider: 'sandbox',
    raw_body: '{}',
    verified: true,
    object_kind: 'payment',
    object_id: 'pay_1',
    reported_status: 'succeeded',
    ...(processed ? { processed_at: new Date(), outcome: 'duplicate' } : {}),
  });

  it('marks applied only an unprocessed callback, once, and leaves a processed one as it was', async () => {
    const fresh = callback(false);
    const done = callback(true);
    await db('provider_callbacks').insert([fresh, done]);
    const rows = JSON.stringify([
      { id: 'pay_1', callback_id: fresh.id },
      { id: 'pay_2', callback_id: done.id },
    ]);
    expect((await runSql<{ id: string }>(db, apply, [rows])).map((r) => r.id)).to.deep.equal([fresh.id]);
    expect((await db('provider_callbacks').where({ id: fresh.id }).first()).outcome).to.equal('applied');
    expect((await db('provider_callbacks').where({ id: done.id }).first()).outcome).to.equal('duplicate');
    // applied once: the same rows again mark nothing
    expect(await runSql(db, apply, [rows])).to.deep.equal([]);
  });

  it('guards a write: free while its callback is unprocessed (or there is none), refused after', async () => {
    const fresh = callback(false);
    await db('provider_callbacks').insert(fresh);
    expect((await runSql<{ free: boolean }>(db, unprocessed, [fresh.id]))[0].free).to.equal(true);
    expect((await runSql<{ free: boolean }>(db, unprocessed, [null]))[0].free).to.equal(true);
    await runSql(db, apply, [JSON.stringify([{ id: 'pay_1', callback_id: fresh.id }])]);
    expect((await runSql<{ free: boolean }>(db, unprocessed, [fresh.id]))[0].free).to.equal(false);
  });
});
