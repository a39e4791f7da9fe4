import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { createDb, WAITS, type Db } from '../../shared/db/knex';
import { childEnv, ROOT } from '../../scripts/lib/processes';
import { Unprocessable } from '../../shared/errors';
import { newId } from '../../shared/ids';
import { outgoingDebit, outgoingKinds, outgoingDeliver, paymentCredit, type Currency } from '../../shared/rules/ledger';
import { availableBalances } from '../../shared/ledger/balance';
import { foldCredits, post, reverse } from '../../shared/ledger/postings';
import { checkLedger } from '../../shared/ledger/check';

/** `npm run ledger:check` on this file's database: exit code and output. */
function ledgerCheck(env: TestEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'scripts/ledger-check.ts'],
      { cwd: ROOT, env: childEnv(env.processEnv) },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('ledger', () => {
  let env: TestEnv;
  // postings run as the pools run them: a worker's pool, whose waits are a worker's (a web request's 2 s bound is not for this load)
  let pool: Db;
  const db = () => pool;
  const merchant = () => newId('merchant');

  const credit = (merchantId: string, amount: number, currency: Currency = 'USD', fee = 0) =>
    db().transaction((trx) =>
      post(
        trx,
        paymentCredit({
          paymentId: newId('payment'),
          merchantId,
          environment: 'test',
          currency,
          amountCharged: amount + fee,
          amountNet: amount,
          fee,
        }),
      ),
    );
  const debit = (merchantId: string, amount: number, fee = 0) => {
    const referenceId = newId('payout');
    return db()
      .transaction((trx) =>
        post(
          trx,
          outgoingDebit('payout', { referenceId, merchantId, environment: 'test', currency: 'USD', amount, fee }),
        ),
      )
      .then(() => referenceId);
  };

  before(async () => {
    env = await startTestEnv();
    pool = createDb(env.config.databaseUrl, 10, { waits: WAITS.worker });
  });
  after(async () => {
    expect(await checkLedger(db()), 'ledger:check after the ledger file').to.deep.equal([]);
    await pool.destroy();
    await env.close();
  });

  it('50 concurrent debits against a balance that covers 10: exactly 10 pass, the rest get insufficient-balance', async () => {
    const m = merchant();
    await credit(m, 1_000);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => debit(m, 90, 10)));
    const passed = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(passed).to.have.length(10);
    expect(refused).to.have.length(40);
    for (const r of refused) {
      expect(r.reason).to.be.instanceOf(Unprocessable);
      expect(r.reason).to.include({ code: 'insufficient-balance' });
    }
    expect(await availableBalances(db(), m, 'test')).to.deep.equal({ USD: 0, CDF: 0 });
    // refused postings leave nothing behind
    expect(await db()('ledger_transactions').where({ merchant_id: m, kind: 'payout_debit' })).to.have.length(10);
    expect(await checkLedger(db())).to.deep.equal([]);
  });

  it('moves money between many merchants at once without deadlocks, and every sum is exact', async () => {
    const ms = [merchant(), merchant(), merchant()];
    // credits, debits and settlements over shared platform accounts, in every order at once
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      const m = ms[i % 3];
      work.push(
        credit(m, 500, 'CDF', 20).then(async () => {
          const referenceId = newId('refund');
          const movement = {
            referenceId,
            merchantId: m,
            environment: 'test' as const,
            currency: 'CDF' as const,
            amount: 300,
          };
          await db().transaction((trx) => post(trx, outgoingDebit('refund', movement)));
          await db().transaction((trx) => post(trx, outgoingDeliver('refund', movement)));
        }),
      );
    }
    await Promise.all(work);
    for (const m of ms) expect((await availableBalances(db(), m, 'test')).CDF).to.equal(10 * (500 - 300));
    expect(await checkLedger(db())).to.deep.equal([]);
  });

  it('writes credits unfolded without locking the account; a debit folds them in under the lock; the sweep folds the rest', async () => {
    const m = merchant();
    const account = () => db()('ledger_accounts').where({ owner: m, kind: 'available', currency: 'USD' }).first();
    const unfoldedOf = async (id: number) =>
      (await db()('ledger_entries').where({ account_id: id, unfolded: true })).map((e) => e.amount);
    await credit(m, 1_000);
    // a debit holding the account's row lock (the lock of an UPDATE of its balance) does not stop credits
    const a = await account();
    const blocker = await db().transaction();
    try {
      await blocker('ledger_accounts').where({ id: a.id }).forNoKeyUpdate();
      await Promise.all([credit(m, 200), credit(m, 300)]);
    } finally {
      await blocker.rollback();
    }
    expect((await account()).balance, 'cached balance untouched by credits').to.equal(0);
    expect((await unfoldedOf(a.id)).sort()).to.deep.equal([1_000, 200, 300]);
    expect((await availableBalances(db(), m, 'test')).USD).to.equal(1_500);
    expect(await checkLedger(db())).to.deep.equal([]);

    await debit(m, 1_400, 50); // needs the unfolded credits: folded in by the debit's own statement
    expect(await unfoldedOf(a.id)).to.deep.equal([]);
    expect((await account()).balance).to.equal(50);
    const refused = await debit(m, 51).catch((err) => err);
    expect(refused).to.be.instanceOf(Unprocessable).and.include({ code: 'insufficient-balance' });

    await credit(m, 25);
    expect(await foldCredits(db())).to.be.at.least(1);
    expect(await unfoldedOf(a.id)).to.deep.equal([]);
    expect((await account()).balance).to.equal(75);
    expect(await availableBalances(db(), m, 'test')).to.deep.equal({ USD: 75, CDF: 0 });
    expect(await checkLedger(db())).to.deep.equal([]);
  });

  it('keeps every sum exact with credits, debits and sweeps of one merchant all at once', async () => {
    const m = merchant();
    await credit(m, 100);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      work.push(credit(m, 100));
      if (i % 2) work.push(debit(m, 150).catch(() => 'refused'));
      if (i % 10 === 0) work.push(foldCredits(db()));
    }
    const results = await Promise.all(work);
    const debited = results.filter((r) => typeof r === 'string' && r.startsWith('po_')).length;
    expect((await availableBalances(db(), m, 'test')).USD).to.equal(4_100 - 150 * debited);
    expect(debited).to.be.at.least(1);
    expect(await checkLedger(db())).to.deep.equal([]);
  });

  it('posts once per (kind, reference): a job run twice moves money once', async () => {
    const m = merchant();
    await credit(m, 1_000);
    const p = outgoingDebit('refund', {
      referenceId: newId('refund'),
      merchantId: m,
      environment: 'test',
      currency: 'USD',
      amount: 400,
    });
    const first = await db().transaction((trx) => post(trx, p));
    const again = await Promise.all([1, 2, 3].map(() => db().transaction((trx) => post(trx, p))));
    expect(first).to.equal(true);
    expect(again).to.deep.equal([false, false, false]);
    expect((await availableBalances(db(), m, 'test')).USD).to.equal(600);
  });

  it('a return gives back exactly what the debit took, fee included, once', async () => {
    const m = merchant();
    await credit(m, 1_000);
    const id = await debit(m, 700, 25);
    expect((await availableBalances(db(), m, 'test')).USD).to.equal(275);
    const kinds = outgoingKinds('payout');
    expect(await db().transaction((trx) => reverse(trx, kinds.debit, id, kinds.return))).to.equal(true);
    expect(await db().transaction((trx) => reverse(trx, kinds.debit, id, kinds.return))).to.equal(false);
    expect(await availableBalances(db(), m, 'test')).to.deep.equal({ USD: 1_000, CDF: 0 });
    const inTransit = await db()('ledger_accounts').where({ owner: m, kind: 'in_transit' }).first();
    expect(inTransit.balance).to.equal(0);
  });

  it('refuses a posting whose entries do not sum to zero before writing anything', async () => {
    const m = merchant();
    const bad = {
      ...paymentCredit({
        paymentId: newId('payment'),
        merchantId: m,
        environment: 'test',
        currency: 'USD',
        amountCharged: 100,
        amountNet: 100,
        fee: 0,
      }),
    };
    bad.entries = [bad.entries[0], { ...bad.entries[1], amount: 99 }];
    let error: unknown;
    await db()
      .transaction((trx) => post(trx, bad))
      .catch((e) => (error = e));
    expect(error).to.be.instanceOf(Error);
    expect(await db()('ledger_transactions').where({ merchant_id: m })).to.have.length(0);
  });

  describe('npm run ledger:check', () => {
    it('passes on a sound ledger', async () => {
      const res = await ledgerCheck(env);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stdout).to.match(/^ledger ok: \d+ accounts, \d+ transactions balanced/);
    });

    it('reports a balance that no longer matches its entries, and an unbalanced transaction, and exits non-zero', async () => {
      const m = merchant();
      await credit(m, 800);
      await foldCredits(db());
      const account = await db()('ledger_accounts').where({ owner: m, kind: 'available' }).first();
      await db()('ledger_accounts').where({ id: account.id }).update({ balance: 801 });
      const txId = randomUUID();
      await db()('ledger_transactions').insert({
        id: txId,
        kind: 'manual',
        reference_id: 'tamper-1',
        environment: 'test',
        currency: 'USD',
        merchant_id: m,
      });
      await db()('ledger_entries').insert([
        { transaction_id: txId, account_id: account.id, amount: 5 },
        { transaction_id: txId, account_id: account.id, amount: 1 },
      ]);
      try {
        const problems = await checkLedger(db());
        expect(problems).to.have.length(2);
        expect(problems.join('\n'))
          .to.include(`account ${account.id}`)
          .and.include('cached 801, entries 806')
          .and.include('(manual tamper-1) sums to 6 USD');
        const res = await ledgerCheck(env);
        expect(res.code).to.equal(1);
        expect(res.stderr).to.include('MISMATCH account').and.include('ledger check failed: 2 problem(s)');
      } finally {
        await db()('ledger_entries').where({ transaction_id: txId }).del();
        await db()('ledger_transactions').where({ id: txId }).del();
        await db()('ledger_accounts').where({ id: account.id }).update({ balance: 800 });
      }
      expect((await ledgerCheck(env)).code).to.equal(0);
    });
  });
});
