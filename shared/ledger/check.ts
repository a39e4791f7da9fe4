import type { Executor } from '../db/knex';

/**
 * Recomputes every balance from the entries and checks every transaction sums to zero.
 * Returns the problems found (empty when the ledger is sound).
 */
export async function checkLedger(db: Executor): Promise<string[]> {
  const problems: string[] = [];
  const mismatched = await db('ledger_accounts as a')
    .leftJoin('ledger_entries as e', 'e.account_id', 'a.id')
    // platform accounts keep no cached balance (their balance is the sum of their entries);
    // pending credits are not in the cached balance yet (postings.ts)
    .where('a.allow_negative', false)
    .groupBy('a.id')
    .havingRaw('a.balance <> coalesce(sum(e.amount) filter (where not e.pending), 0)')
    .select('a.id', 'a.owner', 'a.kind', 'a.currency', 'a.environment', 'a.balance', db.raw('coalesce(sum(e.amount) filter (where not e.pending), 0)::bigint as computed'));
  for (const r of mismatched) {
    problems.push(`account ${r.id} (${r.owner} ${r.environment} ${r.currency} ${r.kind}): cached ${r.balance}, entries ${r.computed}`);
  }
  const unbalanced = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .join('ledger_transactions as t', 't.id', 'e.transaction_id')
    .groupBy('t.id', 'a.currency')
    .havingRaw('sum(e.amount) <> 0')
    .select('t.id', 't.kind', 't.reference_id', 'a.currency', db.raw('sum(e.amount)::bigint as total'));
  for (const r of unbalanced) problems.push(`transaction ${r.id} (${r.kind} ${r.reference_id}) sums to ${r.total} ${r.currency}`);
  const mixed = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .join('ledger_transactions as t', 't.id', 'e.transaction_id')
    .whereRaw('a.currency <> t.currency or a.environment <> t.environment')
    .select('t.id');
  for (const r of mixed) problems.push(`transaction ${r.id} mixes currencies or environments`);
  const negative = await db('ledger_accounts').where('allow_negative', false).where('balance', '<', 0).select('id', 'owner', 'balance');
  for (const r of negative) problems.push(`account ${r.id} (${r.owner}) is negative: ${r.balance}`);
  const pendingDebits = await db('ledger_entries as e').join('ledger_accounts as a', 'a.id', 'e.account_id').where('e.pending', true).andWhere((q) => q.where('e.amount', '<=', 0).orWhere('a.allow_negative', true)).select('e.id');
  for (const r of pendingDebits) problems.push(`entry ${r.id} is pending but not a credit to a guarded account`);
  const lonely = await db('ledger_transactions as t')
    .leftJoin('ledger_entries as e', 'e.transaction_id', 't.id')
    .groupBy('t.id')
    .havingRaw('count(e.id) < 2')
    .select('t.id');
  for (const r of lonely) problems.push(`transaction ${r.id} has fewer than two entries`);
  return problems;
}
