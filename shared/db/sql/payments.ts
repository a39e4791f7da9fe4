import type { PaymentRow } from '../../payments/rows';
import type { OutboxMessage } from '../../queues/outbox';
import { runSql, sqlStatement, type SqlStatement } from './run';
import { KEY_VALUES, takeKeySql } from './idempotencyKeys';
import type { Executor } from '../knex';

/** Every column of a new payment, in the order of the statement (a fixed list, not a row's key order). */
const COLUMNS = [
  'id', 'merchant_id', 'environment', 'status', 'method', 'currency', 'amount', 'amount_charged', 'amount_net', 'fee',
  'fee_bearer', 'amount_refunded', 'reference', 'description', 'metadata', 'operator', 'phone', 'customer_email',
  'customer_name', 'return_url', 'provider', 'provider_ref', 'failure_code', 'failure_message', 'version', 'created',
  'completed', 'sent_at', 'window_ends_at', 'asked_at', 'asks', 'card', 'checkout_token', 'challenge_url', 'checkout_error',
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
    withPush ? `, o as (insert into outbox (id, queue, job_name, payload, delay_ms) select ${next()}, ${next()}, ${next()}, ${next()}, ${next()} from p)` : '',
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
    ...COLUMNS.map((c) => (c === 'metadata' || c === 'card' ? JSON.stringify(row[c]) : row[c])),
    row.status,
    ...(push ? [push.id, push.queue, push.job_name, JSON.stringify(push.payload), push.delay_ms] : []),
  ];
  const [{ created }] = await runSql<{ created: number }>(db, push ? WITH_PUSH : WITHOUT_PUSH, values);
  return created === 1;
}
