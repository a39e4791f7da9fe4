import { expect } from 'chai';
import {
  CREDIT_COLUMNS,
  creditEntryRecords,
  creditRecord,
  insertCreditEntriesSql,
  insertCreditSql,
  type CreditPosting,
} from '../../shared/ledger/credit';

/** shared/ledger/credit.ts: a credit written with its operation's move (the writer's `lt`, `le`). */

const columnsOf = (recordset: string) => recordset.split(',').map((c) => c.trim().split(/\s+/)[0]);
const posting: CreditPosting = {
  id: '00000000-0000-4000-8000-000000000001',
  kind: 'payment_credit',
  referenceId: 'pay_1',
  merchantId: 'mer_1',
  currency: 'USD',
  entries: [
    { account_id: 1, amount: -1000, unfolded: false },
    { account_id: 2, amount: 970, unfolded: true },
    { account_id: 3, amount: 30, unfolded: true },
  ],
};

describe('the ledger credit part (shared/ledger/credit.ts)', () => {
  it('posts a credit once: a second one of its kind and reference is left alone and not returned', () => {
    const sql = insertCreditSql('src x');
    expect(sql).to.match(
      /^insert into ledger_transactions \(id, kind, reference_id, environment, currency, merchant_id\)/,
    );
    expect(sql).to.contain('from src x');
    expect(sql).to.match(/on conflict \(kind, reference_id\) do nothing returning id$/);
  });

  it('writes entries only with a transaction written now (joined to the returned ids)', () => {
    const sql = insertCreditEntriesSql('$6', 'lt');
    expect(sql).to.match(/^insert into ledger_entries \(transaction_id, account_id, amount, unfolded\)/);
    expect(sql).to.contain('select lt.id, x.account_id, x.amount, x.unfolded');
    expect(sql).to.contain('from json_to_recordset($6::json)');
    expect(sql).to.match(/join lt on lt\.id = x\.transaction_id$/);
  });

  it('has the records and their recordset columns agree', () => {
    const record = creditRecord('pay_1', 'test', posting);
    expect(Object.keys(record).sort()).to.deep.equal(['object_id', ...columnsOf(CREDIT_COLUMNS)].sort());
    expect(record).to.include({ object_id: 'pay_1', reference_id: 'pay_1', environment: 'test', merchant_id: 'mer_1' });
    expect(creditEntryRecords(posting)).to.deep.equal(
      posting.entries.map((e) => ({ transaction_id: posting.id, ...e })),
    );
  });
});
