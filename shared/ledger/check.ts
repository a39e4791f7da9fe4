import type { Executor } from '../db/knex';
import { LedgerAccount } from '../db/models';

/**
 * Checks every balance (the `ledger_balances` view, migration 20261125010700) against the sum of
 * its account's entries, and every transaction sums to zero. Returns the problems found (empty
 * when the ledger is sound).
 */
export async function checkLedger(db: Executor): Promise<string[]> {
  const problems: string[] = [];
  const mismatched = await db('ledger_balances as b')
    .join('ledger_accounts as a', 'a.id', 'b.id')
    .leftJoin('ledger_entries as e', 'e.account_id', 'b.id')
    // a platform account's balance is the sum of its entries by definition: nothing to compare
    .where('b.allow_negative', false)
    .groupBy('b.id', 'b.owner', 'b.kind', 'b.currency', 'b.environment', 'b.balance', 'a.balance')
    .havingRaw('b.balance <> coalesce(sum(e.amount), 0)')
    // reported as the cached balance against its folded entries (the unfolded credits are in neither)
    .select(
      'b.id',
      'b.owner',
      'b.kind',
      'b.currency',
      'b.environment',
      'a.balance',
      db.raw('coalesce(sum(e.amount) filter (where not e.unfolded), 0)::bigint as computed'),
    );
  for (const r of mismatched)
    problems.push(
      `account ${r.id} (${r.owner} ${r.environment} ${r.currency} ${r.kind}): cached ${r.balance}, entries ${r.computed}`,
    );
  const unbalanced = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .join('ledger_transactions as t', 't.id', 'e.transaction_id')
    .groupBy('t.id', 'a.currency')
    .havingRaw('sum(e.amount) <> 0')
    .select('t.id', 't.kind', 't.reference_id', 'a.currency', db.raw('sum(e.amount)::bigint as total'));
  for (const r of unbalanced)
    problems.push(`transaction ${r.id} (${r.kind} ${r.reference_id}) sums to ${r.total} ${r.currency}`);
  const mixed = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .join('ledger_transactions as t', 't.id', 'e.transaction_id')
    .whereRaw('a.currency <> t.currency or a.environment <> t.environment')
    .select('t.id');
  for (const r of mixed) problems.push(`transaction ${r.id} mixes currencies or environments`);
  const negative = await LedgerAccount.query(db)
    .where('allow_negative', false)
    .where('balance', '<', 0)
    .select('id', 'owner', 'balance');
  for (const r of negative) problems.push(`account ${r.id} (${r.owner}) is negative: ${r.balance}`);
  const unfoldedDebits = await db('ledger_entries as e')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .where('e.unfolded', true)
    .andWhere((q) => q.where('e.amount', '<=', 0).orWhere('a.allow_negative', true))
    .select('e.id');
  for (const r of unfoldedDebits) problems.push(`entry ${r.id} is unfolded but not a credit to a guarded account`);
  const lonely = await db('ledger_transactions as t')
    .leftJoin('ledger_entries as e', 'e.transaction_id', 't.id')
    .groupBy('t.id')
    .havingRaw('count(e.id) < 2')
    .select('t.id');
  for (const r of lonely) problems.push(`transaction ${r.id} has fewer than two entries`);
  return problems;
}
