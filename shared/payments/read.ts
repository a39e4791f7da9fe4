import type { Caller } from '../caller';
import type { Executor } from '../db/knex';
import { isId } from '../ids';
import { NotFound } from '../errors';
import { pageQuery, parseCursor, parseLimit, toPage } from '../db/pagination';
import { Payment } from '../db/models';
import type { ListPaymentsQuery } from './schemas';
import { paymentView } from './view';
import type { PaymentRow } from '../db/rows';

/** Read side of payments: a merchant only ever sees its own payments of its key's environment. */

export async function getPayment(db: Executor, viewer: Caller, id: string, baseUrl: string) {
  if (!isId('payment', id)) throw new NotFound('Payment');
  const row = await Payment.query(db).findOne({ id, merchant_id: viewer.merchantId, environment: viewer.environment });
  if (!row) throw new NotFound('Payment');
  return paymentView(row, baseUrl);
}

export async function listPayments(db: Executor, viewer: Caller, query: ListPaymentsQuery, baseUrl: string) {
  const limit = parseLimit(query.limit);
  const cursor = parseCursor(query.cursor, 'pay_');
  const q = Payment.query(db).where({ merchant_id: viewer.merchantId, environment: viewer.environment });
  if (query.reference !== undefined) q.where({ reference: query.reference });
  if (query.status !== undefined) q.where({ status: query.status });
  if (query.payment_link !== undefined) q.where({ payment_link: query.payment_link });
  const rows: PaymentRow[] = await pageQuery(q, cursor, limit);
  return toPage(rows, limit, (r) => paymentView(r, baseUrl));
}
