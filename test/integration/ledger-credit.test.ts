import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../shared/db/knex';
import { runSql, sqlStatement } from '../../shared/db/sql/run';
import {
  CREDIT_COLUMNS,
  creditEntryRecords,
  creditRecord,
  insertCreditEntriesSql,
  insertCreditSql,
  type CreditPosting,
} from '../../shared/ledger/credit';
import { ownDatabase } from '../helpers/own-database';

/** shared/ledger/credit.ts on a real database: a credit posted twice is written once. */
describe('the ledger credit part, on Postgres', () => {
  let db: Db;
  ownDatabase((d) => (db = d));
  const post = sqlStatement(
    'ledger-credit-test-post',
    `with lt as (${insertCreditSql(`json_to_recordset($1::json) as x(object_id text, ${CREDIT_COLUMNS})`)}),
          le as (${insertCreditEntriesSql('$2', 'lt')} returning 1)
     select (select count(*) from lt)::int as posted, (select count(*) from le)::int as entries`,
  );

  async function accounts(): Promise<number[]> {
    const rows = await db('ledger_accounts')
      .insert([
        { owner: 'platform', environment: 'test', currency: 'USD', kind: 'clearing', allow_negative: true },
        { owner: 'mer_1', environment: 'test', currency: 'USD', kind: 'available' },
      ])
      .returning('id');
    return rows.map((r: { id: string | number }) => Number(r.id));
  }

  const credit = (referenceId: string, [from, to]: number[], kind = 'payment_credit'): CreditPosting => ({
    id: randomUUID(),
    kind,
    referenceId,
    merchantId: 'mer_1',
    currency: 'USD',
    entries: [
      { account_id: from, amount: -1000, unfolded: false },
      { account_id: to, amount: 1000, unfolded: true },
    ],
  });
  const write = async (p: CreditPosting) =>
    (
      await runSql<{ posted: number; entries: number }>(db, post, [
        JSON.stringify([creditRecord('pay_1', 'test', p)]),
        JSON.stringify(creditEntryRecords(p)),
      ])
    )[0];

  it('writes one transaction and its entries for a credit posted twice (on conflict do nothing)', async () => {
    const ids = await accounts();
    const first = credit('pay_twice', ids);
    expect(await write(first)).to.deep.equal({ posted: 1, entries: 2 });
    // the same credit again, under a new id (a repeated move, another path): nothing of it
    expect(await write(credit('pay_twice', ids))).to.deep.equal({ posted: 0, entries: 0 });
    const transactions = await db('ledger_transactions').where({ reference_id: 'pay_twice' }).select('id');
    expect(transactions.map((t) => t.id)).to.deep.equal([first.id]);
    expect(await db('ledger_entries').where({ transaction_id: first.id }).select('amount')).to.have.length(2);
    // another kind of posting of the same reference is its own
    expect(await write(credit('pay_twice', ids, 'refund_return'))).to.deep.equal({ posted: 1, entries: 2 });
  });
});
