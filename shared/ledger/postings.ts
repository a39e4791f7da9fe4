import { LedgerAccount, LedgerTransaction } from '../db/models';
import { randomUUID } from 'node:crypto';
import type { Executor, Trx } from '../db/knex';
import { Unprocessable } from '../errors';
import { foldAccount, insertPosting, insertPostingAndMove, unfoldedAccounts } from '../db/sql/ledger';
import { allowsNegative, assertBalanced, normalise, reversal, type AccountRef, type Posting } from '../rules/ledger';

/** Writes ledger postings: balanced double-entry transactions, once per object. */

/** An account's key in the maps of account ids: owner/kind (environment and currency are the posting's). */
export const accountKey = (a: { owner: string; kind: string }) => `${a.owner}/${a.kind}`;

/** A posting that only adds to the merchant's guarded accounts (a payment's credit): written unfolded, without a lock. */
export const onlyCredits = (p: Posting) => p.entries.every((e) => allowsNegative(e.account) || e.amount > 0);

/**
 * The ids of a normalised posting's accounts by accountKey, created on first use; takes no lock
 * (also the writer's credits, normalised by creditOnly: shared/operations/transition.ts).
 */
export async function postingAccountIds(
  trx: Trx,
  { environment, currency, entries }: Posting,
): Promise<Map<string, number>> {
  const refs = entries.map((e) => e.account);
  const find = async () => {
    const rows: { id: number; owner: string; kind: string }[] = await LedgerAccount.query(trx)
      .where({ environment, currency })
      .where((q) => {
        for (const a of refs) q.orWhere({ owner: a.owner, kind: a.kind });
      })
      .select('id', 'owner', 'kind');
    return new Map(rows.map((r) => [accountKey(r), r.id]));
  };
  const found = await find();
  if (found.size === refs.length) return found;
  // in one fixed order, so that two first postings cannot wait on each other
  const rows = refs
    .map((a) => ({ owner: a.owner, kind: a.kind, environment, currency, allow_negative: allowsNegative(a) }))
    .sort((a, b) => (accountKey(a) < accountKey(b) ? -1 : 1));
  await LedgerAccount.query(trx).insert(rows).onConflict(['owner', 'environment', 'currency', 'kind']).ignore();
  return find();
}

/**
 * Posts once per (kind, referenceId): a second call for the same object is a no-op that
 * returns false, so a job that runs twice moves money once.
 *
 * A posting that only adds to a merchant's guarded accounts writes its entries unfolded and takes
 * no lock, so a busy merchant's payments never wait on each other (the balance is the cached one
 * plus the unfolded credits: the `ledger_balances` view). One that takes from them (a refund, a
 * payout) locks them in id order, folds their unfolded credits in and moves them in the statement
 * that writes its entries, so the locks are held only from there to the commit (callers post
 * last); a move below zero refuses the posting with 422 `insufficient-balance` and the caller's
 * transaction rolls back. Platform accounts are neither locked nor cached (allowsNegative).
 */
export async function post(trx: Trx, posting: Posting): Promise<boolean> {
  // one entry per account (the balance update below moves each account once)
  const p = normalise(posting);
  assertBalanced(p);
  const ids = await postingAccountIds(trx, p);
  const moves = p.entries.map((e) => ({
    id: ids.get(accountKey(e.account))!,
    amount: e.amount,
    guarded: !allowsNegative(e.account),
  }));
  const guarded = moves.filter((m) => m.guarded);
  const creditsOnly = onlyCredits(p);
  const transaction = {
    id: randomUUID(),
    kind: p.kind,
    reference_id: p.referenceId,
    environment: p.environment,
    currency: p.currency,
    merchant_id: p.merchantId,
  };
  const entries = moves.map((m) => ({ account_id: m.id, amount: m.amount, unfolded: creditsOnly && m.guarded }));
  if (creditsOnly) return insertPosting(trx, transaction, entries);
  const { posted, moved } = await insertPostingAndMove(trx, transaction, entries, guarded);
  if (!posted) return false;
  if (moved < guarded.length)
    throw new Unprocessable('insufficient-balance', 'The available balance is too low for this operation');
  return true;
}

/**
 * Folds unfolded credits into their accounts' cached balances (the ledger sweep), one account
 * per statement, so that reading a balance never sums many entries. Returns the accounts folded.
 */
export async function foldCredits(db: Executor, batch = 100): Promise<number> {
  const accounts = await unfoldedAccounts(db, batch);
  for (const account of accounts) {
    try {
      await foldAccount(db, account);
    } catch (err) {
      // a debit folding the same account at that moment may win a deadlock against the sweep:
      // it folded the credits itself, and whatever is left waits for the next sweep
      if ((err as { code?: string }).code !== '40P01') throw err;
    }
  }
  return accounts.length;
}

/** Gives back exactly what `originalKind` moved for `referenceId` (once). */
export async function reverse(trx: Trx, originalKind: string, referenceId: string, kind: string): Promise<boolean> {
  const tx = await LedgerTransaction.query(trx).findOne({ kind: originalKind, reference_id: referenceId });
  if (!tx) throw new Error(`no ${originalKind} posting for ${referenceId} to reverse`);
  const entries: { owner: string; kind: AccountRef['kind']; amount: number }[] = await trx('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .where('e.transaction_id', tx.id)
    .orderBy('e.id')
    .select('a.owner', 'a.kind', 'e.amount');
  const original: Posting = {
    kind: originalKind,
    referenceId,
    environment: tx.environment,
    currency: tx.currency,
    merchantId: tx.merchant_id,
    entries: entries.map((e) => ({ account: { owner: e.owner, kind: e.kind }, amount: e.amount })),
  };
  return post(trx, reversal(original, kind));
}
