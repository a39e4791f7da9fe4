import { randomUUID } from 'node:crypto';
import type { Executor, Trx } from '../db/knex';
import { unprocessable } from '../errors';
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

const pairs = (n: number) => Array.from({ length: n }, () => '(?::bigint, ?::bigint)').join(', ');

/**
 * Posts once per (kind, referenceId): a second call for the same object is a no-op that
 * returns false, so a job that runs twice moves money once.
 *
 * The merchant's accounts must never go below zero and carry a cached balance; they are locked
 * (in id order) and moved by the very statement that writes the entries, so that a busy
 * merchant's account is held only from that statement to the commit (callers post last). A
 * move that would take one below zero refuses the posting with 422 `insufficient-balance`, and
 * the caller's transaction rolls back. The platform's accounts (fees, provider clearing) may
 * take any value and nothing is decided on them: neither locked nor cached, so that postings of
 * different merchants never wait on each other.
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

  const ids = await accountIds(trx, p.environment, p.currency, p.entries.map((e) => e.account));
  const moves = p.entries.map((e) => ({ id: ids.get(keyOf(e.account))!, amount: e.amount }));
  const guarded = moves.filter((_, i) => !allowsNegative(p.entries[i].account));
  const entries = `insert into ledger_entries (transaction_id, account_id, amount) select ?::uuid, id, amount from (values ${pairs(moves.length)}) as v(id, amount)`;
  const entryBindings = [txId, ...moves.flatMap((m) => [m.id, m.amount])];
  if (guarded.length === 0) {
    await trx.raw(entries, entryBindings);
    return true;
  }
  const { rows } = await trx.raw(
    `with locked as materialized (select id from ledger_accounts where id = any(?::bigint[]) order by id for update),
          moved as (update ledger_accounts as a set balance = a.balance + v.amount
                      from (values ${pairs(guarded.length)}) as v(id, amount)
                     where a.id = v.id and a.id in (select id from locked) and a.balance + v.amount >= 0
                     returning a.id),
          written as (${entries})
     select count(*)::int as moved from moved`,
    [guarded.map((m) => m.id), ...guarded.flatMap((m) => [m.id, m.amount]), ...entryBindings],
  );
  if (rows[0].moved < guarded.length) throw unprocessable('insufficient-balance', 'The available balance is too low for this operation');
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
