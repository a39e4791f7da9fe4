import { insertLedgerTransactionsSql } from '../db/sql/ledger';

/**
 * A credit posted with an operation's move, inside the writer's statement
 * (shared/operations/writer.ts: `lt`, `le`). A credit takes from no guarded account, so it locks
 * nothing and needs no balance check: it goes with the move, in the move's statement (a posting
 * that takes from a balance goes after it: shared/ledger/postings.ts `post`).
 */

/** A credit posting with its accounts' ids (shared/operations/transition.ts `creditPosting`). */
export interface CreditPosting {
  id: string;
  kind: string;
  referenceId: string;
  merchantId: string | null;
  currency: string;
  entries: { account_id: number; amount: number; unfolded: boolean }[];
}

/** A credit's transaction row's columns as a json recordset reads them. */
export const CREDIT_COLUMNS =
  'id uuid, kind text, reference_id text, environment text, currency text, merchant_id text';

/** A credit's transaction row, with the id of the operation whose move it goes with (the writer joins on it). */
export const creditRecord = (objectId: string, environment: string, p: CreditPosting) => ({
  object_id: objectId,
  id: p.id,
  kind: p.kind,
  reference_id: p.referenceId,
  environment,
  currency: p.currency,
  merchant_id: p.merchantId,
});

/** A credit's entries, each with its transaction's id (the entries' insert joins on it). */
export const creditEntryRecords = (p: CreditPosting) => p.entries.map((e) => ({ transaction_id: p.id, ...e }));

/**
 * The credit's transaction rows, from `source` (rows `x` with CREDIT_COLUMNS), written as every
 * posting's are (unique per kind and reference; a credit already there is left alone and not
 * returned, so none of its entries is written twice, and the statement still writes the rest of
 * its move). Returns the ids of the transactions written.
 */
export const insertCreditSql = insertLedgerTransactionsSql;

/**
 * The credit's entries, from the json parameter `param` (creditEntryRecords), each joined to its
 * transaction in `transactions` (insertCreditSql's returned ids): entries are written only with
 * a transaction written now, never twice for one posting.
 */
export const insertCreditEntriesSql = (param: string, transactions: string) =>
  `insert into ledger_entries (transaction_id, account_id, amount, unfolded)
             select ${transactions}.id, x.account_id, x.amount, x.unfolded
               from json_to_recordset(${param}::json) as x(transaction_id uuid, account_id bigint, amount bigint, unfolded boolean)
               join ${transactions} on ${transactions}.id = x.transaction_id`;
