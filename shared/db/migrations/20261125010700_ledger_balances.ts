import type { Knex } from 'knex';

/**
 * A ledger account's balance, defined once (`ledger_balances`): a merchant's guarded account is
 * its cached balance plus its unfolded credits (credits written without touching the account
 * row, folded in under its lock by the next debit or by the ledger sweep: shared/ledger/postings.ts);
 * a platform account keeps no cached balance, so it is the sum of its entries. Exact numeric, read
 * as text by whoever needs every digit. `pending` on ledger entries becomes `unfolded`: `pending`
 * is a status of payments, refunds, payouts and deliveries only.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table ledger_entries rename column pending to unfolded`);
  await knex.raw(`alter index ledger_entries_pending_idx rename to ledger_entries_unfolded_idx`);
  await knex.raw(`
    create view ledger_balances as
    select a.id, a.owner, a.kind, a.environment, a.currency, a.allow_negative,
           case when a.allow_negative
                then coalesce((select sum(e.amount) from ledger_entries e where e.account_id = a.id), 0)
                else a.balance::numeric + coalesce((select sum(e.amount) from ledger_entries e where e.account_id = a.id and e.unfolded), 0)
           end as balance
      from ledger_accounts a`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop view ledger_balances`);
  await knex.raw(`alter index ledger_entries_unfolded_idx rename to ledger_entries_pending_idx`);
  await knex.raw(`alter table ledger_entries rename column unfolded to pending`);
}
