import { getConfig } from '../../shared/config';
import { QUEUES } from '../../shared/queues/names';
import { sendRefund } from '../../shared/refunds/send';
import { reconcileOpenRefunds } from '../../shared/refunds/reconcile';
import { runPool } from '../bootstrap';
import { guardRefundJob } from './job';

/**
 * refund: hands each new refund to the payment's provider, once per refund
 * (shared/refunds/send.ts). Provider timeouts are retried with the queue's exponential backoff;
 * the outcome arrives by callback, applied by the callback-reconciler; a sweep asks the provider
 * about refunds still open past the provider window (shared/outgoing/reconcile.ts).
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
  loops: [
    {
      name: 'open-refunds-sweep',
      intervalMs: (ctx) => ctx.config.reconcileIntervalMs,
      run: async (ctx) => {
        const counts = await reconcileOpenRefunds(ctx);
        if (Object.keys(counts).length) ctx.log.info({ counts }, 'open refunds reconciled');
      },
    },
  ],
});
