import { sqlStatement } from './run';

/**
 * The reconciliation's statements (docs/reconciliation.md): each a set-based pass over one
 * connector's business day, so that Postgres streams the lines and the operations through its
 * joins and nothing of the day is held in the process.
 */

/**
 * One batch of a statement's lines, column by column ($1 statement, $2 connector, then one array
 * per column): one text whatever the batch, so that it is prepared once and no query is built per
 * batch. A line already known (connector, kind, line key) is kept as it was; answers how many
 * were new.
 */
export const INSERT_LINES = sqlStatement(
  'reconciliation-insert-lines',
  `with ins as (
     insert into statement_lines (statement_id, connector, line_no, raw, our_id, provider_ref, kind, status, amount,
                                  currency, fee, occurred_at, business_day, line_key)
     select $1, $2, x.line_no, x.raw::jsonb, x.our_id, x.provider_ref, x.kind, x.status, x.amount, x.currency, x.fee,
            x.occurred_at, x.business_day, x.line_key
       from unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[],
                   $11::bigint[], $12::timestamptz[], $13::date[], $14::text[])
            as x(line_no, raw, our_id, provider_ref, kind, status, amount, currency, fee, occurred_at, business_day, line_key)
     on conflict (connector, kind, line_key) do nothing
     returning 1
   )
   select count(*)::int as n from ins`,
);

/** Our operations of a connector as one relation: kind, id, status, what moved, when it completed. */
const OPS = (where: string) => `
  select 'payment'::text as object_kind, p.id, p.status, p.method, p.amount_charged as amount, p.currency, p.provider_ref,
         p.completed, p.status in ('succeeded', 'refunded') as done, p.status in ('pending', 'processing') as open
    from payments p where ${where.replace(/\bo\./g, 'p.')}
  union all
  select 'refund', r.id, r.status, null, r.amount, r.currency, r.provider_ref, r.completed,
         r.status = 'succeeded', r.status in ('pending', 'processing')
    from refunds r where ${where.replace(/\bo\./g, 'r.')}
  union all
  select 'payout', q.id, q.status, null, q.amount, q.currency, q.provider_ref, q.completed,
         q.status = 'succeeded', q.status in ('pending', 'processing')
    from payouts q where ${where.replace(/\bo\./g, 'q.')}`;

/** The table a line's kind is matched in. */
const KIND_OF_LINE = `case l.kind when 'collection' then 'payment' when 'reversal' then 'payment' else l.kind end`;

/**
 * One item per line of the day ($1 connector, $2 day, $3 run, $4 the contract's fee in basis
 * points or null): the line's operation by our id where the line carries it, else by the
 * provider's reference; then its category, the first that applies:
 * reversed, missing-here, amount-mismatch (amount, currency or a fee other than the contract's),
 * status-mismatch, matched.
 */
export const CLASSIFY_LINES = sqlStatement(
  'reconciliation-classify-lines',
  `insert into reconciliation_items (run_id, category, line_id, object_kind, object_id, details)
   select $3, c.category, l.id, o.object_kind, o.id,
          jsonb_build_object(
            'theirs', jsonb_build_object('kind', l.kind, 'status', l.status, 'amount', l.amount, 'currency', l.currency,
                                         'fee', l.fee, 'provider_ref', l.provider_ref, 'our_id', l.our_id,
                                         'occurred_at', l.occurred_at),
            'ours', case when o.id is null then null else
                    jsonb_build_object('status', o.status, 'amount', o.amount, 'currency', o.currency, 'open', o.open,
                                       'method', o.method) end,
            'expected_fee', c.expected_fee)
     from statement_lines l
     left join lateral (
       select x.* from (${OPS(`o.id = l.our_id and o.provider = l.connector`)}) x
        where l.our_id is not null and x.object_kind = ${KIND_OF_LINE}
       union all
       select y.* from (${OPS(`o.provider = l.connector and o.provider_ref = l.provider_ref`)}) y
        where l.our_id is null and y.object_kind = ${KIND_OF_LINE}
       limit 1
     ) o on true
     cross join lateral (
       select case when $4::int is null or l.kind = 'reversal' then null else (l.amount * $4::int + 5000) / 10000 end as expected_fee
     ) f
     cross join lateral (
       select f.expected_fee, case
         when l.kind = 'reversal' then 'reversed'
         when o.id is null then 'missing-here'
         when l.amount <> o.amount or l.currency <> o.currency then 'amount-mismatch'
         when l.status = 'completed' and f.expected_fee is not null and l.fee <> f.expected_fee then 'amount-mismatch'
         when l.status = 'completed' and not o.done then 'status-mismatch'
         when l.status <> 'completed' and o.done then 'status-mismatch'
         else 'matched' end as category
     ) c
    where l.connector = $1 and l.business_day = $2::date and l.kind in ('collection', 'payout', 'refund', 'reversal')`,
);

/**
 * One item per operation of the connector completed in the day ([$4, $5) Unix seconds) that no
 * loaded line lists, whatever its day ($1 connector, $3 run).
 */
export const CLASSIFY_MISSING_THERE = sqlStatement(
  'reconciliation-classify-missing-there',
  `insert into reconciliation_items (run_id, category, object_kind, object_id, details)
   select $3, 'missing-there', o.object_kind, o.id,
          jsonb_build_object('theirs', null,
                             'ours', jsonb_build_object('status', o.status, 'amount', o.amount, 'currency', o.currency,
                                                        'completed', o.completed, 'provider_ref', o.provider_ref))
     from (${OPS(`o.provider = $1 and o.completed >= $4 and o.completed < $5 and o.status in ('succeeded', 'refunded')`)}) o
    where $2::date is not null
      and not exists (select 1 from statement_lines l where l.our_id = o.id and l.kind <> 'reversal')
      and not exists (select 1 from statement_lines l where l.connector = $1 and l.our_id is null
                         and l.provider_ref = o.provider_ref and l.kind <> 'reversal')`,
);

/**
 * A run again ($1) replaces its items: each new item (id above $2) that is the same pair in the
 * same category as one resolved before keeps that resolution (an operator's note is not asked
 * twice), then the items before are deleted.
 */
export const KEEP_RESOLUTIONS = sqlStatement(
  'reconciliation-keep-resolutions',
  `with kept as (
     update reconciliation_items n
        set resolved_at = o.resolved_at, resolution_note = o.resolution_note
       from reconciliation_items o
      where n.run_id = $1 and n.id > $2::bigint and o.run_id = $1 and o.id <= $2::bigint
        and o.resolved_at is not null and n.category = o.category
        and n.line_id is not distinct from o.line_id and n.object_id is not distinct from o.object_id
      returning n.id
   )
   delete from reconciliation_items where run_id = $1 and id <= $2::bigint`,
);

/**
 * An operator resolves a mismatch ($1 item, $2 note, $3 when): once; the item as it is then.
 * Matched items need nothing and are not resolved.
 */
export const RESOLVE_ITEM = sqlStatement(
  'reconciliation-resolve-item',
  `update reconciliation_items set resolved_at = $3, resolution_note = $2
    where id = $1 and category <> 'matched' and resolved_at is null
    returning id`,
);

/** The run's counts per category. */
export const COUNT_ITEMS = sqlStatement(
  'reconciliation-count-items',
  `select category, count(*)::int as n from reconciliation_items where run_id = $1 group by category`,
);

/** The open operations the provider's statement says it completed or failed: a status query settles them. */
export const SETTLEABLE = sqlStatement(
  'reconciliation-settleable',
  `select i.id as item_id, i.object_kind, i.object_id, i.details->'ours'->>'method' as method
     from reconciliation_items i
    where i.run_id = $1 and i.category = 'status-mismatch' and (i.details->'ours'->>'open')::boolean
    order by i.id`,
);

/**
 * The provider fees of the day's completed lines, one posting per line (kind provider_fee,
 * reference `<connector>:<kind>:<line key>`): posted once, whatever runs again. $1 connector,
 * $2 day, $3 environment, $4/$5 the fee and clearing account ids per currency (arrays indexed
 * by $6 currencies).
 */
export const POST_FEES = sqlStatement(
  'reconciliation-post-fees',
  `with lines as (
     select l.connector || ':' || l.kind || ':' || l.line_key as reference_id, l.currency, l.fee
       from statement_lines l
      where l.connector = $1 and l.business_day = $2::date and l.fee > 0 and l.status = 'completed'
   ), accounts as (
     select * from unnest($6::text[], $4::bigint[], $5::bigint[]) as a(currency, fee_account, clearing_account)
   ), t as (
     insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
     select gen_random_uuid(), 'provider_fee', reference_id, $3, currency, null from lines
     on conflict (kind, reference_id) do nothing
     returning id, reference_id, currency
   ), e as (
     insert into ledger_entries (transaction_id, account_id, amount, unfolded)
     select t.id, v.account_id, v.amount, false
       from t join lines using (reference_id) join accounts a on a.currency = t.currency
       cross join lateral (values (a.fee_account, -lines.fee), (a.clearing_account, lines.fee)) as v(account_id, amount)
     returning amount
   )
   select count(*)::int / 2 as posted from e`,
);

/** The day's fees per currency, from its lines (what the run shows). */
export const DAY_FEES = sqlStatement(
  'reconciliation-day-fees',
  `select currency, sum(fee)::bigint::text as fees from statement_lines
    where connector = $1 and business_day = $2::date and status = 'completed' and fee > 0 group by currency`,
);

/** An account's balance as of an instant: the sum of its entries (platform accounts are never cached). */
export const ACCOUNT_SUM = sqlStatement(
  'reconciliation-account-sum',
  `select coalesce(sum(e.amount), 0)::bigint::text as balance
     from ledger_accounts a join ledger_entries e on e.account_id = a.id
    where a.owner = $1 and a.kind = $2 and a.environment = $3 and a.currency = $4 and e.created_at <= $5`,
);

/** A run's items in id order, with their lines, from `$2` (exclusive), of `$3` (a category, or null for all). */
export const ITEMS_PAGE = sqlStatement(
  'reconciliation-items-page',
  `select i.id, i.category, i.object_kind, i.object_id, i.line_id, i.details, i.resolved_at, i.resolution_note,
          l.raw as line
     from reconciliation_items i left join statement_lines l on l.id = i.line_id
    where i.run_id = $1 and i.id > $2 and ($3::text is null or i.category = $3)
    order by i.id limit $4`,
);

/** Every item of a run (the CSV export, through a cursor). */
export const ITEMS_ALL = sqlStatement(
  'reconciliation-items-all',
  `select i.id, i.category, i.object_kind, i.object_id, i.line_id, i.details::text as details,
          extract(epoch from i.resolved_at)::bigint as resolved
     from reconciliation_items i
    where i.run_id = $1 and ($2::text is null or i.category = $2)
    order by i.id`,
);

/** One item with its line ($1 item id). */
export const ITEM_ONE = sqlStatement(
  'reconciliation-item-one',
  `select i.id, i.run_id, i.category, i.object_kind, i.object_id, i.line_id, i.details, i.resolved_at,
          i.resolution_note, l.raw as line
     from reconciliation_items i left join statement_lines l on l.id = i.line_id
    where i.id = $1`,
);

/** What is still to be looked at: mismatches not resolved, newest run first ($1 since, $2 limit). */
export const OPEN_ITEMS = sqlStatement(
  'reconciliation-open-items',
  `select i.id, i.category, i.object_kind, i.object_id, i.details, r.connector, r.business_day::text as business_day,
          r.id as run_id, l.raw as line
     from reconciliation_items i join reconciliation_runs r on r.id = i.run_id
     left join statement_lines l on l.id = i.line_id
    where i.category <> 'matched' and i.resolved_at is null and i.created_at >= $1
    order by r.business_day desc, i.id limit $2`,
);

/**
 * The items of the runs since $1 not resolved, per connector and category (matched items need
 * nothing and are never resolved), with the age in seconds at $2 of the oldest (what
 * `reconciliation_items` and `reconciliation_oldest_unresolved_seconds` serve).
 */
export const UNRESOLVED_ITEMS = sqlStatement(
  'reconciliation-unresolved-items',
  `select r.connector, i.category, count(*)::int as n,
          extract(epoch from $2::timestamptz - min(i.created_at))::float8 as oldest
     from reconciliation_items i join reconciliation_runs r on r.id = i.run_id
    where i.resolved_at is null and i.created_at >= $1
    group by r.connector, i.category`,
);

/** Each connector's and currency's latest wallet reading (what `provider_wallet_difference` serves). */
export const LATEST_WALLET_READINGS = sqlStatement(
  'reconciliation-latest-wallet-readings',
  `select distinct on (connector, currency) connector, currency, difference::bigint::text as difference
     from provider_balance_readings
    order by connector, currency, business_day desc, read_at desc`,
);
