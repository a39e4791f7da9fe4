import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ownDatabase } from '../helpers/own-database';
import type { Db, Executor } from '../../shared/db/knex';
import { runLedgerCheck } from '../../shared/ledger/check';

/**
 * The incremental `ledger:check` (shared/ledger/check.ts): a closed month is read once and its
 * sums kept; later runs read the open month only, and agree with the full check; a closed month
 * changed afterwards is not seen by them, and is by `--full`.
 */
describe('ledger:check by month: closed months read once, --full reads everything', function () {
  this.timeout(60_000);
  let db: Db;
  ownDatabase((d) => (db = d));
  const merchant = `mer_${randomUUID()}`;
  let guarded: number;
  let clearing: number;
  const closed: string[] = [];
  const tampered: { id: number } = { id: 0 };

  /** A transaction of 2 folded entries at `at` (clearing → the merchant), the cached balance raised, committed together. */
  async function post(at: Date, amount: number): Promise<void> {
    await db.transaction((trx) => postIn(trx, at, amount));
  }

  async function postIn(db: Executor, at: Date, amount: number): Promise<void> {
    const tx = randomUUID();
    await db('ledger_transactions').insert({
      id: tx,
      kind: 'payment_credit',
      reference_id: `pay_${tx}`,
      environment: 'live',
      currency: 'USD',
      merchant_id: merchant,
      created_at: at,
    });
    await db('ledger_entries').insert([
      { transaction_id: tx, account_id: clearing, amount: -amount, created_at: at },
      { transaction_id: tx, account_id: guarded, amount, created_at: at },
    ]);
    await db('ledger_accounts').where({ id: guarded }).increment('balance', amount);
  }

  before(async () => {
    [{ id: guarded }] = await db('ledger_accounts')
      .insert({ owner: merchant, environment: 'live', currency: 'USD', kind: 'available' })
      .returning('id');
    [{ id: clearing }] = await db('ledger_accounts')
      .insert({
        owner: 'platform',
        environment: 'live',
        currency: 'USD',
        kind: 'provider_clearing',
        allow_negative: true,
      })
      .returning('id');
    const now = new Date();
    // months 5 to 2 before this one: closed whatever today's date; and the open month
    for (let back = 5; back >= 2; back--) {
      const mid = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 15));
      closed.push(mid.toISOString().slice(0, 8) + '01');
      await post(mid, 100);
      await post(new Date(mid.getTime() + 3600_000), 40);
    }
    await post(new Date(now.getTime() - 60_000), 25);
  });

  it('the first run reads every month and keeps the closed ones; balances agree with the full check', async () => {
    const full = await runLedgerCheck(db, { full: true });
    const first = await runLedgerCheck(db);
    expect(first.problems).to.deep.equal([]);
    expect(full.problems).to.deep.equal([]);
    for (const m of closed) {
      expect(first.monthsRead).to.include(m);
      expect(first.monthsKept).to.include(m);
    }
    const { rows } = await db.raw(
      `select month::text, total::text from ledger_check_sums where account_id = ? order by 1`,
      [guarded],
    );
    expect(rows).to.deep.equal(closed.map((month) => ({ month, total: '140' })));
  });

  it('the next run reads no closed month again, and sees a wrong balance as the full check does', async () => {
    const next = await runLedgerCheck(db);
    for (const m of closed) expect(next.monthsRead).not.to.include(m);
    expect(next.monthsRead).to.have.length(1); // the open month
    expect(next.monthsKept).to.deep.equal([]);
    await db('ledger_accounts').where({ id: guarded }).increment('balance', 1);
    try {
      const incremental = await runLedgerCheck(db);
      const full = await runLedgerCheck(db, { full: true });
      expect(incremental.problems).to.have.length(1);
      expect(incremental.problems[0]).to.include(`account ${guarded}`).and.include('cached 586, entries 585');
      expect(full.problems).to.deep.equal(incremental.problems);
    } finally {
      await db('ledger_accounts').where({ id: guarded }).decrement('balance', 1);
    }
  });

  it('a closed month changed after it was kept: unseen by the incremental run, caught by --full', async () => {
    const month = closed[1];
    const [entry] = await db('ledger_entries')
      .where({ account_id: guarded, amount: 100 })
      .where('created_at', '>=', month)
      .orderBy('created_at')
      .limit(1)
      .select('id', 'created_at');
    tampered.id = entry.id;
    await db('ledger_entries').where({ id: entry.id, created_at: entry.created_at }).update({ amount: 150 });
    try {
      const incremental = await runLedgerCheck(db);
      expect(incremental.problems, 'the kept month is not read again').to.deep.equal([]);
      expect(incremental.monthsRead).not.to.include(month);
      const full = await runLedgerCheck(db, { full: true });
      const text = full.problems.join('\n');
      expect(text).to.include(`account ${guarded}`).and.include('cached 585, entries 635');
      expect(text).to.include('sums to 50 USD');
      expect(text).to.include(`month ${month} account ${guarded}: kept 140, entries now 190`);
    } finally {
      await db('ledger_entries').where({ id: entry.id, created_at: entry.created_at }).update({ amount: 100 });
    }
    expect((await runLedgerCheck(db, { full: true })).problems).to.deep.equal([]);
  });

  it('reads one snapshot: postings committed while it runs never show as a wrong balance', async () => {
    let writing = true;
    let posted = 0;
    const writer = (async () => {
      for (; writing; posted++) await post(new Date(), 1);
    })();
    try {
      for (let i = 0; i < 15; i++) {
        expect((await runLedgerCheck(db)).problems, `incremental run ${i}`).to.deep.equal([]);
        expect((await runLedgerCheck(db, { full: true })).problems, `full run ${i}`).to.deep.equal([]);
      }
    } finally {
      writing = false;
      await writer;
    }
    expect(posted, 'postings went on during the runs').to.be.greaterThan(30);
  });
});
