import { Payment, Refund } from '../db/models';
import type { Executor } from '../db/knex';
import { isId } from '../ids';
import { NotFound } from '../errors';
import type { Caller } from '../caller';
import { refundView } from './view';
import type { RefundRow } from '../db/rows';

/** GET /v1/payments/{id}/refunds: the payment's refunds in the order they were made; 404 for anyone else's payment. */
export async function listRefunds(db: Executor, viewer: Caller, paymentId: string) {
  if (!isId('payment', paymentId)) throw new NotFound('Payment');
  const payment = await Payment.query(db)
    .findOne({ id: paymentId, merchant_id: viewer.merchantId, environment: viewer.environment })
    .select('id');
  if (!payment) throw new NotFound('Payment');
  const rows: RefundRow[] = await Refund.query(db)
    .where({ payment_id: paymentId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return { object: 'list' as const, data: rows.map(refundView) };
}
