import type { Executor } from '../knex';
import type { LedgerEntry, LedgerTransaction } from '../models';
import { runSql, sqlStatement } from './run';

/**
 * The ledger's posting statements (their rules: shared/ledger/postings.ts). The entries and the
 * moves come as arrays (unnest keeps their order), so each statement has one text whatever the
 * number of entries, and is prepared once per connection.
 */

type PostingRow = Pick<LedgerTransaction, 'id' | 'kind' | 'reference_id' | 'environment' | 'currency' | 'merchant_id'>;
type EntryRow = Pick<LedgerEntry, 'account_id' | 'amount' | 'unfolded'>;

/**
 * A posting's transaction rows, from `source` (rows `x` with id, kind, reference_id, environment,
 * currency, merchant_id). A posting is unique per kind and reference: one already there (the same
 * posting made again, by a repeated move or another path) is left alone, `on conflict do
 * nothing`, and not returned, so that nothing of the second one is written (its entries join the
 * rows returned). Returns the ids of the transactions written. Every posting writes its
 * transaction through this text: the credits in the kernel's statement (shared/ledger/credit.ts)
 * and the postings here.
 */
export const insertLedgerTransactionsSql = (source: string) =>
  `insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
             select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
               from ${source}
             on conflict (kind, reference_id) do nothing returning id`;

/** `t`: the transaction row, returned only when the posting is new: $1..$6 */
const TRANSACTION = `t as (${insertLedgerTransactionsSql(
  '(values ($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::text)) as x(id, kind, reference_id, environment, currency, merchant_id)',
)})`;

/** the entries, written only with a new transaction row, from $first (account ids, amounts, unfolded flags) */
const entries = (
  first: number,
) => `written as (insert into ledger_entries (transaction_id, account_id, amount, unfolded)
          select t.id, v.id, v.amount, v.unfolded from t, unnest($${first}::bigint[], $${first + 1}::bigint[], $${first + 2}::boolean[]) as v(id, amount, unfolded))`;

/**
 * Locks guarded accounts in id order (FOR NO KEY UPDATE: the key share that new entries take on
 * their account stays free, so credits go on meanwhile), folds their unfolded credits into the
 * cached balance, and moves each by its amount unless that would take it below zero; with
 * `guard`, only when the posting's transaction row is new. Moves from $first (ids, amounts).
 */
const foldAndMove = (
  first: number,
  guard: string,
) => `locked as materialized (select id from ledger_accounts where id = any($${first}::bigint[]) order by id for no key update),
     folded as (update ledger_entries set unfolded = false
                 where unfolded and account_id in (select id from locked)
                 returning account_id, amount),
     moves as (select v.id, v.amount + coalesce((select sum(f.amount) from folded f where f.account_id = v.id), 0)::bigint as amount
                 from unnest($${first}::bigint[], $${first + 1}::bigint[]) as v(id, amount)),
     moved as (update ledger_accounts as a set balance = a.balance + m.amount
                 from moves m
                where a.id = m.id and a.id in (select id from locked) and a.balance + m.amount >= 0 ${guard}
                returning a.id)`;

const POST_CREDITS = sqlStatement(
  'ledger-post-credits',
  `with ${TRANSACTION},
     ${entries(7)}
select count(*)::int as posted from t`,
);

const POST_AND_MOVE = sqlStatement(
  'ledger-post-and-move',
  `with ${TRANSACTION},
     ${foldAndMove(7, 'and exists (select 1 from t)')},
     ${entries(9)}
select (select count(*) from t)::int as posted, (select count(*) from moved)::int as moved`,
);

const FOLD = sqlStatement(
  'ledger-fold',
  `with ${foldAndMove(1, '')}
select (select count(*) from moved)::int as moved`,
);

const entryValues = (rows: EntryRow[]) => [
  rows.map((e) => e.account_id),
  rows.map((e) => e.amount),
  rows.map((e) => e.unfolded),
];
const postingValues = (p: PostingRow) => [p.id, p.kind, p.reference_id, p.environment, p.currency, p.merchant_id];

/** A posting that takes no lock (credits only): its transaction row and entries; false when already posted. */
export async function insertPosting(db: Executor, posting: PostingRow, rows: EntryRow[]): Promise<boolean> {
  const [r] = await runSql<{ posted: number }>(db, POST_CREDITS, [...postingValues(posting), ...entryValues(rows)]);
  return r.posted === 1;
}

/** A posting that moves guarded accounts: whether it was new, and how many of `moves` moved (fewer: one would go below zero). */
export async function insertPostingAndMove(
  db: Executor,
  posting: PostingRow,
  rows: EntryRow[],
  moves: { id: number; amount: number }[],
): Promise<{ posted: boolean; moved: number }> {
  const [r] = await runSql<{ posted: number; moved: number }>(db, POST_AND_MOVE, [
    ...postingValues(posting),
    moves.map((m) => m.id),
    moves.map((m) => m.amount),
    ...entryValues(rows),
  ]);
  return { posted: r.posted === 1, moved: r.moved };
}

/** Folds one account's unfolded credits into its cached balance, under its lock. */
export async function foldAccount(db: Executor, accountId: number): Promise<void> {
  await runSql(db, FOLD, [[accountId], [0]]);
}

/** The accounts with credits not yet folded into their cached balance (the fold's, shared/ledger/postings.ts), at most $1. */
const UNFOLDED_ACCOUNTS = sqlStatement(
  'ledger-unfolded-accounts',
  `select distinct account_id from ledger_entries where unfolded limit $1`,
);

export async function unfoldedAccounts(db: Executor, limit: number): Promise<number[]> {
  return (await runSql<{ account_id: number }>(db, UNFOLDED_ACCOUNTS, [limit])).map((r) => r.account_id);
}
