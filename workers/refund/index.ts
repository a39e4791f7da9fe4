import { getConfig } from '../../shared/config';
import { QUEUES } from '../../shared/queues/names';
import { sendRefund } from '../../shared/refunds/send';
import { runPool } from '../bootstrap';
import { guardRefundJob } from './job';

/**
 * refund: hands each new refund to the payment's provider, once per refund
 * (shared/refunds/send.ts). Provider timeouts are retried with the queue's exponential backoff;
 * the outcome arrives by callback, applied by the callback-reconciler.
 */
const lockMs = getConfig().payments.paymentJobLockMs;

void runPool({
  name: 'refund',
  processor: {
    queue: QUEUES.refund,
    guard: guardRefundJob,
    process: (ctx, data) => sendRefund(ctx, data.refundId, ctx.log.child({ requestId: data.requestId, refundId: data.refundId })),
    workerOptions: { lockDuration: lockMs, stalledInterval: lockMs },
  },
});
