import type { Executor } from '../knex';
import { runSql, sqlStatement, streamSql } from './run';

/**
 * Statement lines (docs/decisions.md#integrators-kit): the ledger transactions that moved a
 * merchant's `available` balance, one line each, with the object they came from. `net` is what
 * moved on available (the ledger's word), `amount` the object's amount signed the same way (a
 * payment's amount_charged; a refund or payout negative, its reversal positive), and
 * `fee = amount - net` (a payment's fee, a payout's fee, its return negative; refunds 0).
 */

/** A line's select, from a ledger transaction `t` (exported for db:measure-history, which times it). */
export const LINE = `
  select t.id::text as id,
         case t.kind when 'payment_credit' then 'payment' when 'refund_debit' then 'refund' when 'refund_return' then 'refund_reversal'
                     when 'payout_debit' then 'payout' when 'payout_return' then 'payout_reversal' end as type,
         t.reference_id as source_id,
         coalesce(p.reference, rp.reference, po.reference) as reference,
         t.currency,
         x.amount, x.amount - n.net as fee, n.net,
         coalesce(p.status, r.status, po.status) as status,
         floor(extract(epoch from t.created_at))::bigint as created
    from ledger_transactions t
    left join payments p on t.kind = 'payment_credit' and p.id = t.reference_id
    left join refunds r on t.kind in ('refund_debit', 'refund_return') and r.id = t.reference_id
    left join payments rp on rp.id = r.payment_id
    left join payouts po on t.kind in ('payout_debit', 'payout_return') and po.id = t.reference_id
    cross join lateral (
      select case t.kind when 'payment_credit' then p.amount_charged when 'refund_debit' then -r.amount when 'refund_return' then r.amount
                         when 'payout_debit' then -po.amount when 'payout_return' then po.amount end as amount
    ) x
    cross join lateral (
      select coalesce(sum(e.amount), 0)::bigint as net
        from ledger_entries e join ledger_accounts a on a.id = e.account_id
       -- an entry's created_at is its transaction's (one statement, one now()): one monthly partition read
       where e.transaction_id = t.id and e.created_at = t.created_at and a.owner = t.merchant_id and a.kind = 'available'
    ) n`;

export const STATEMENT_KINDS = `('payment_credit', 'refund_debit', 'refund_return', 'payout_debit', 'payout_return')`;

export interface StatementLine {
  id: string;
  type: 'payment' | 'refund' | 'refund_reversal' | 'payout' | 'payout_reversal';
  source_id: string;
  reference: string | null;
  currency: string;
  amount: number;
  fee: number;
  net: number;
  status: string | null;
  created: number;
}

/** A page of a settlement's lines ($1 the settlement, $2 the limit), `after` the condition on $3. */
const settlementPage = (name: string, after: string) =>
  sqlStatement(
    name,
    `${LINE}
   where t.settlement_id = $1 and t.kind in ${STATEMENT_KINDS}${after}
   order by t.created_at desc, t.id desc
   limit $2`,
  );
const SETTLEMENT_PAGE = settlementPage('settlement-lines', '');
// after the cursor's line: its exact instant comes from its row, so lines of one second are neither skipped nor repeated
const SETTLEMENT_PAGE_AFTER = settlementPage(
  'settlement-lines-after',
  ' and (t.created_at, t.id) < (select c.created_at, c.id from ledger_transactions c where c.id = $3::uuid)',
);
const SETTLEMENT_PAGE_BEFORE = settlementPage('settlement-lines-before', ' and t.created_at < to_timestamp($3)');

/** One page of a settlement's lines, newest first (`limit` rows; ask one more to know if there are more). */
export function settlementLines(
  db: Executor,
  settlementId: string,
  limit: number,
  after: { created: number; id: string | null } | null,
): Promise<StatementLine[]> {
  if (!after) return runSql(db, SETTLEMENT_PAGE, [settlementId, limit]);
  if (after.id) return runSql(db, SETTLEMENT_PAGE_AFTER, [settlementId, limit, after.id]);
  return runSql(db, SETTLEMENT_PAGE_BEFORE, [settlementId, limit, after.created]);
}

const TRANSACTION_LINES = sqlStatement(
  'transaction-lines',
  `${LINE}
   where t.merchant_id = $1 and t.environment = $2 and t.kind in ${STATEMENT_KINDS}
     and t.created_at >= to_timestamp($3) and t.created_at < to_timestamp($4)
   order by t.created_at, t.id`,
);

/** A merchant's lines of one environment in [from, to) (Unix seconds), oldest first, read through a cursor (the CSV export). */
export function transactionLines(
  db: Executor,
  merchantId: string,
  environment: string,
  from: number,
  to: number,
  batchSize: number,
): AsyncGenerator<StatementLine> {
  return streamSql<StatementLine>(db, TRANSACTION_LINES, [merchantId, environment, from, to], batchSize);
}
