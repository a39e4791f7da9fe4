import { getConfig } from '../../shared/config';
import { sendPayout } from '../../shared/payouts/send';
import { QUEUES } from '../../shared/queues/names';
import { runPool } from '../bootstrap';
import { guardPayoutJob } from './job';

/**
 * payout: hands each new payout to its provider, once per payout (shared/payouts/send.ts), and
 * marks it processing. Provider timeouts are retried with the queue's exponential backoff; the
 * outcome arrives by callback, applied by the callback-reconciler.
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
});
