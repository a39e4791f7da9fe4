import { getConfig } from '../../shared/config';
import { sendPayout } from '../../shared/payouts/send';
import { QUEUES } from '../../shared/queues/names';
import { reconcileOpenPayouts } from '../../shared/payouts/reconcile';
import { runPool } from '../bootstrap';
import { guardPayoutJob } from './job';

/**
 * payout: hands each new payout to its provider, once per payout (shared/payouts/send.ts), and
 * marks it processing. Provider timeouts are retried with the queue's exponential backoff; the
 * outcome arrives by callback, applied by the callback-reconciler; a sweep asks the provider about
 * payouts still open past the provider window (shared/outgoing/reconcile.ts).
 */
const lockMs = getConfig().payments.paymentJobLockMs;

void runPool({
  name: 'payout',
  processor: {
    queue: QUEUES.payout,
    guard: guardPayoutJob,
    process: (ctx, data) => sendPayout(ctx, data.payoutId, ctx.log.child({ requestId: data.requestId, payoutId: data.payoutId })),
    workerOptions: { lockDuration: lockMs, stalledInterval: lockMs },
  },
  loops: [
    {
      name: 'open-payouts-sweep',
      intervalMs: (ctx) => ctx.config.reconcileIntervalMs,
      run: async (ctx) => {
        const counts = await reconcileOpenPayouts(ctx);
        if (Object.keys(counts).length) ctx.log.info({ counts }, 'open payouts reconciled');
      },
    },
  ],
});
