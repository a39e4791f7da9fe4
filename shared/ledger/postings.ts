import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Executor, Trx } from '../db/knex';
import { Unprocessable } from '../errors';
import { allowsNegative, assertBalanced, normalise, reversal, type AccountRef, type Currency, type Environment, type Posting } from '../domain/ledger';

/** Writes ledger postings: balanced double-entry transactions, once per object. */

const keyOf = (a: { owner: string; kind: string }) => `${a.owner}/${a.kind}`;

/** The ids of the posting's accounts, created on first use. Takes no lock. */
async function accountIds(trx: Trx, env: Environment, currency: Currency, refs: AccountRef[]): Promise<Map<string, number>> {
  const find = async () => {
    const rows: { id: number; owner: string; kind: string }[] = await trx('ledger_accounts')
      .where({ environment: env, currency })
      .where((q) => {
        for (const a of refs) q.orWhere({ owner: a.owner, kind: a.kind });
      })
      .select('id', 'owner', 'kind');
    return new Map(rows.map((r) => [keyOf(r), r.id]));
  };
  const found = await find();
  if (found.size === refs.length) return found;
  // in one fixed order, so that two first postings cannot wait on each other
  const rows = refs
    .map((a) => ({ owner: a.owner, kind: a.kind, environment: env, currency, allow_negative: allowsNegative(a) }))
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  await trx('ledger_accounts').insert(rows).onConflict(['owner', 'environment', 'currency', 'kind']).ignore();
  return find();
}

const tuples = (n: number, types: string) => Array.from({ length: n }, () => `(${types})`).join(', ');

type Sql = { sql: string; bindings: Knex.Value[] };

/**
 * One statement that locks guarded accounts in id order (FOR NO KEY UPDATE, the lock an UPDATE
 * of the balance takes: the key share that new entries take on their account stays free, so
 * credits go on meanwhile), folds their pending credits into the cached balance, and moves each
 * by its amount unless that would take it below zero. With a posting, its transaction row (`t`,
 * empty when already posted: then nothing moves) and its entries are written by the same
 * statement. Returns whether the posting was new and how many accounts moved.
 */
async function foldAndMove(db: Executor, moves: { id: number; amount: number }[], posting?: { transaction: Sql; entries: Sql }): Promise<{ posted: boolean; moved: number }> {
  const { rows } = await db.raw(
    `with ${posting ? `t as (${posting.transaction.sql}),` : ''}
          locked as materialized (select id from ledger_accounts where id = any(?::bigint[]) order by id for no key update),
          folded as (update ledger_entries set pending = false
                      where pending and account_id in (select id from locked)
                      returning account_id, amount),
          moves as (select v.id, v.amount + coalesce((select sum(f.amount) from folded f where f.account_id = v.id), 0)::bigint as amount
                      from (values ${tuples(moves.length, '?::bigint, ?::bigint')}) as v(id, amount)),
          moved as (update ledger_accounts as a set balance = a.balance + m.amount
                      from moves m
                     where a.id = m.id and a.id in (select id from locked) and a.balance + m.amount >= 0
                       ${posting ? 'and exists (select 1 from t)' : ''}
                     returning a.id)
          ${posting ? `, written as (${posting.entries.sql})` : ''}
     select ${posting ? '(select count(*) from t)::int' : '1'} as posted, (select count(*) from moved)::int as moved`,
    [
      ...(posting?.transaction.bindings ?? []),
      moves.map((m) => m.id),
      ...moves.flatMap((m) => [m.id, m.amount]),
      ...(posting?.entries.bindings ?? []),
    ],
  );
  return { posted: rows[0].posted === 1, moved: rows[0].moved };
}

/**
 * Posts once per (kind, referenceId): a second call for the same object is a no-op that
 * returns false, so a job that runs twice moves money once.
 *
 * A merchant's accounts are guarded: never below zero, with a cached balance. A posting that
 * only adds to them (a payment's credit) writes its entries as pending and takes no lock, so a
 * busy merchant's payments never wait on each other; the balance is the cached one plus the
 * pending credits (balance.ts). A posting that takes from one (a refund, a payout) locks its
 * guarded accounts in id order, folds their pending credits in, and moves them in the statement
 * that writes its entries, so they are held only from there to the commit (callers post last);
 * a move below zero refuses the posting with 422 `insufficient-balance` and the caller's
 * transaction rolls back. The platform's accounts (fees, provider clearing) may take any value
 * and nothing is decided on them: neither locked nor cached. The transaction row and the
 * entries are one statement (after the accounts' ids are read).
 */
export async function post(trx: Trx, posting: Posting): Promise<boolean> {
  // one entry per account (the balance update below moves each account once)
  const p = normalise(posting);
  assertBalanced(p);
  const ids = await accountIds(trx, p.environment, p.currency, p.entries.map((e) => e.account));
  const moves = p.entries.map((e) => ({ id: ids.get(keyOf(e.account))!, amount: e.amount, guarded: !allowsNegative(e.account) }));
  const guarded = moves.filter((m) => m.guarded);
  const creditsOnly = guarded.every((m) => m.amount > 0);
  // `t`: the transaction row, returned only when this posting is new (unique per kind and reference)
  const transaction = trx('ledger_transactions')
    .insert({ id: randomUUID(), kind: p.kind, reference_id: p.referenceId, environment: p.environment, currency: p.currency, merchant_id: p.merchantId })
    .onConflict(['kind', 'reference_id'])
    .ignore()
    .returning('id')
    .toSQL();
  const entries = {
    sql: `insert into ledger_entries (transaction_id, account_id, amount, pending)
          select t.id, v.id, v.amount, v.pending from t, (values ${tuples(moves.length, '?::bigint, ?::bigint, ?::boolean')}) as v(id, amount, pending)`,
    bindings: moves.flatMap((m) => [m.id, m.amount, creditsOnly && m.guarded]),
  };
  if (creditsOnly) {
    const { rows } = await trx.raw(`with t as (${transaction.sql}), written as (${entries.sql}) select count(*)::int as posted from t`, [
      ...transaction.bindings,
      ...entries.bindings,
    ]);
    return rows[0].posted === 1;
  }
  const { posted, moved } = await foldAndMove(trx, guarded, { transaction: { sql: transaction.sql, bindings: [...transaction.bindings] }, entries });
  if (!posted) return false;
  if (moved < guarded.length) throw new Unprocessable('insufficient-balance', 'The available balance is too low for this operation');
  return true;
}

/**
 * Folds pending credits into their accounts' cached balances (the ledger sweep), one account
 * per statement, so that reading a balance never sums many entries. Returns the accounts folded.
 */
export async function foldPendingCredits(db: Executor, batch = 100): Promise<number> {
  const rows: { account_id: number }[] = await db('ledger_entries').where({ pending: true }).distinct('account_id').limit(batch);
  for (const r of rows) {
    try {
      await foldAndMove(db, [{ id: r.account_id, amount: 0 }]);
    } catch (err) {
      // a debit folding the same account at that moment may win a deadlock against the sweep:
      // it folded the credits itself, and whatever is left waits for the next sweep
      if ((err as { code?: string }).code !== '40P01') throw err;
    }
  }
  return rows.length;
}

/** Loads a posting already written (to reverse it exactly). */
export async function findPosting(db: Executor, kind: string, referenceId: string): Promise<Posting | undefined> {
  const tx = await db('ledger_transactions').where({ kind, reference_id: referenceId }).first();
  if (!tx) return undefined;
  const entries = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .where('e.transaction_id', tx.id)
    .orderBy('e.id')
    .select('a.owner', 'a.kind', 'e.amount');
  return {
    kind,
    referenceId,
    environment: tx.environment,
    currency: tx.currency,
    merchantId: tx.merchant_id,
    entries: entries.map((e: { owner: string; kind: AccountRef['kind']; amount: number }) => ({ account: { owner: e.owner, kind: e.kind }, amount: e.amount })),
  };
}

/** Gives back exactly what `originalKind` moved for `referenceId` (once). */
export async function reverse(trx: Trx, originalKind: string, referenceId: string, kind: string): Promise<boolean> {
  const original = await findPosting(trx, originalKind, referenceId);
  if (!original) throw new Error(`no ${originalKind} posting for ${referenceId} to reverse`);
  return post(trx, reversal(original, kind));
}
