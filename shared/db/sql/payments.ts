import type { OutboxMessage } from '../../queues/outbox';
import { runSql, sqlStatement, type SqlStatement } from './run';
import { KEY_VALUES, takeKeySql, takeKeysSql } from './idempotencyKeys';
import type { Executor } from '../knex';
import type { PaymentRow } from '../rows';

/** Every column of a new payment, in the order of the statement (a fixed list, not a row's key order). */
const COLUMNS = [
  'id', 'merchant_id', 'environment', 'status', 'method', 'currency', 'amount', 'amount_charged', 'amount_net', 'fee',
  'fee_bearer', 'amount_refunded', 'reference', 'description', 'metadata', 'operator', 'phone', 'customer_email',
  'customer_name', 'return_url', 'provider', 'provider_ref', 'failure_code', 'failure_message', 'version', 'created',
  'completed', 'sent_at', 'window_ends_at', 'asked_at', 'asks', 'card', 'checkout_token', 'challenge_url', 'checkout_error',
  'traceparent',
] as const satisfies readonly (keyof PaymentRow)[];
// a column added to PaymentRow but not to COLUMNS fails the type check here
const everyColumn: Exclude<keyof PaymentRow, (typeof COLUMNS)[number]> extends never ? true : never = true;
void everyColumn;

function createStatement(withPush: boolean): SqlStatement {
  let n = KEY_VALUES;
  const next = () => `$${++n}`;
  const text = [
    `with k as (${takeKeySql(1)}),`,
    `p as (insert into payments (${COLUMNS.join(', ')}) select ${COLUMNS.map(next).join(', ')} where exists (select 1 from k) returning id),`,
    `c as (insert into payment_status_changes (payment_id, from_status, to_status, reason) select id, null, ${next()}, 'created' from p)`,
    withPush ? `, o as (insert into outbox (id, queue, job_name, payload, delay_ms, traceparent) select ${next()}, ${next()}, ${next()}, ${next()}, ${next()}, ${next()} from p)` : '',
    'select count(*)::int as created from p',
  ].join('\n');
  return sqlStatement(withPush ? 'create-payment-with-push' : 'create-payment', text);
}

const WITH_PUSH = createStatement(true);
const WITHOUT_PUSH = createStatement(false);

/**
 * POST /v1/payments in one statement (one round trip, one commit): the idempotency key with its
 * answer (`keyValues`, shared/idempotency.ts), and only if the key was taken the payment, its
 * first status change and the outbox row of its push. Returns whether the payment was written.
 */
export async function insertPaymentWithKey(db: Executor, keyValues: unknown[], row: PaymentRow, push: OutboxMessage | null): Promise<boolean> {
  const values = [
    ...keyValues,
    // metadata keeps its text (json); no card yet is SQL NULL, as the batch statement writes it
    ...COLUMNS.map((c) => (c === 'metadata' || (c === 'card' && row.card !== null) ? JSON.stringify(row[c]) : row[c])),
    row.status,
    ...(push ? [push.id, push.queue, push.job_name, JSON.stringify(push.payload), push.delay_ms, push.traceparent] : []),
  ];
  const [{ created }] = await runSql<{ created: number }>(db, push ? WITH_PUSH : WITHOUT_PUSH, values);
  return created === 1;
}

/** One POST's writes, as `insertPaymentWithKey` takes them. */
export interface NewPayment {
  keyValues: unknown[];
  row: PaymentRow;
  push: OutboxMessage | null;
}

/**
 * Many POSTs' writes in one statement, one commit (group commit): the rows come
 * as one json parameter (json, not jsonb: a payment's metadata keeps its text), each payment and
 * its status change and outbox row written only if its key was taken. Returns, per POST, whether
 * its payment was written. A refusal of any row (a reference already used, a key twice in the
 * batch) fails the whole statement, and nothing is written: the caller then runs each alone.
 * Keys (takeKeysSql) and payments (by merchant, environment, reference: the unique index) are
 * written in one order, so two batches that share references wait for each other instead of
 * deadlocking.
 */
const CREATE_MANY = sqlStatement(
  'create-payments',
  [
    `with x as materialized (
       select * from json_to_recordset($1::json) as x(i int, merchant_id text, environment text, key uuid, method text, path text,
         request_hash text, status text, response_status int, response_headers text, response_body text, window_ms bigint, payment json, push json)),`,
    `k as (${takeKeysSql('x')}),`,
    `t as materialized (select x.* from x join k on k.merchant_id = x.merchant_id and k.environment = x.environment and k.key = x.key),`,
    `p as (insert into payments (${COLUMNS.join(', ')}) select ${COLUMNS.map((c) => `r.${c}`).join(', ')}
           from t cross join lateral json_populate_record(null::payments, t.payment) r
           order by r.merchant_id, r.environment, r.reference
           returning id, status),`,
    `c as (insert into payment_status_changes (payment_id, from_status, to_status, reason) select id, null, status, 'created' from p),`,
    `o as (insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
           select (push->>'id')::uuid, push->>'queue', push->>'job_name', (push->>'payload')::jsonb, (push->>'delay_ms')::int, push->>'traceparent' from t where push is not null)`,
    'select i from t',
  ].join('\n'),
);

export async function insertPaymentsWithKeys(db: Executor, items: NewPayment[]): Promise<boolean[]> {
  const rows = items.map(({ keyValues: v, row, push }, i) => ({
    i,
    merchant_id: v[0],
    environment: v[1],
    key: v[2],
    method: v[3],
    path: v[4],
    request_hash: v[5],
    status: v[6],
    response_status: v[7],
    response_headers: v[8],
    response_body: v[9] === null ? null : (v[9] as Buffer).toString('base64'),
    window_ms: v[10],
    payment: row,
    push: push && { ...push, payload: JSON.stringify(push.payload) },
  }));
  const taken = new Set((await runSql<{ i: number }>(db, CREATE_MANY, [JSON.stringify(rows)])).map((r) => r.i));
  return items.map((_, i) => taken.has(i));
}
