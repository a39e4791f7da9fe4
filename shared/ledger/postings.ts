import { randomUUID } from 'node:crypto';
import type { Executor, Trx } from '../db/knex';
import { unprocessable } from '../errors';
import { allowsNegative, assertBalanced, normalise, reversal, type AccountRef, type Currency, type Environment, type Posting } from '../domain/ledger';

/**
 * Writes ledger postings. Accounts are created on first use and locked in id order (no
 * deadlocks between concurrent postings); a non-negative account that would go below zero
 * refuses the posting with 422 `insufficient-balance` before anything is written. Merchant
 * accounts keep a cached balance (updated with their entries); the platform's do not (below).
 */

interface AccountRow {
  id: number;
  owner: string;
  kind: string;
  balance: number;
  allow_negative: boolean;
}

const keyOf = (a: { owner: string; kind: string }) => `${a.owner}/${a.kind}`;

async function lockAccounts(trx: Trx, env: Environment, currency: Currency, refs: AccountRef[]): Promise<Map<string, AccountRow>> {
  // created on first use, in one fixed order so that two first postings cannot wait on each other
  const rows = refs
    .map((a) => ({ owner: a.owner, kind: a.kind, environment: env, currency, allow_negative: allowsNegative(a) }))
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  await trx('ledger_accounts').insert(rows).onConflict(['owner', 'environment', 'currency', 'kind']).ignore();
  const select = (list: AccountRef[]) =>
    trx('ledger_accounts')
      .where({ environment: env, currency })
      .where((q) => {
        for (const a of list) q.orWhere({ owner: a.owner, kind: a.kind });
      })
      .orderBy('id')
      .select('id', 'owner', 'kind', 'balance', 'allow_negative');
  // Only accounts that must not go negative are locked (in id order, one statement) and carry
  // a cached balance. The platform's accounts (fees, provider clearing) may take any value and
  // nothing is decided on them, so they are neither locked nor cached: every posting of every
  // merchant writes to them, and a lock there would serialise all money movements.
  const guarded = refs.filter((a) => !allowsNegative(a));
  const open = refs.filter(allowsNegative);
  const found: AccountRow[] = [
    ...(guarded.length ? await select(guarded).forUpdate() : []),
    ...(open.length ? await select(open) : []),
  ];
  return new Map(found.map((r) => [keyOf(r), r]));
}

/**
 * Posts once per (kind, referenceId): a second call for the same object is a no-op that
 * returns false, so a job that runs twice moves money once.
 */
export async function post(trx: Trx, posting: Posting): Promise<boolean> {
  // one entry per account (the balance update below moves each account once)
  const p = normalise(posting);
  assertBalanced(p);
  const txId = randomUUID();
  const inserted = await trx('ledger_transactions')
    .insert({ id: txId, kind: p.kind, reference_id: p.referenceId, environment: p.environment, currency: p.currency, merchant_id: p.merchantId })
    .onConflict(['kind', 'reference_id'])
    .ignore()
    .returning('id');
  if (inserted.length === 0) return false;

  const accounts = await lockAccounts(trx, p.environment, p.currency, p.entries.map((e) => e.account));
  const moves = p.entries.map((e) => ({ account: accounts.get(keyOf(e.account))!, amount: e.amount }));
  for (const m of moves) {
    if (!m.account.allow_negative && m.account.balance + m.amount < 0) {
      throw unprocessable('insufficient-balance', 'The available balance is too low for this operation');
    }
  }
  const cached = moves.filter((m) => !m.account.allow_negative);
  if (cached.length) {
    const values = cached.map(() => '(?::bigint, ?::bigint)').join(', ');
    await trx.raw(`update ledger_accounts as a set balance = a.balance + v.amount from (values ${values}) as v(id, amount) where a.id = v.id`, cached.flatMap((m) => [m.account.id, m.amount]));
  }
  await trx('ledger_entries').insert(moves.map((m) => ({ transaction_id: txId, account_id: m.account.id, amount: m.amount })));
  return true;
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

/** A merchant's available balance per currency in one environment (0 where no account yet). */
export async function availableBalances(db: Executor, merchantId: string, env: Environment): Promise<Record<Currency, number>> {
  const rows: { currency: Currency; balance: number }[] = await db('ledger_accounts')
    .where({ owner: merchantId, environment: env, kind: 'available' })
    .select('currency', 'balance');
  const out: Record<Currency, number> = { USD: 0, CDF: 0 };
  for (const r of rows) out[r.currency] = r.balance;
  return out;
}
