import { getConfig } from '../../shared/config';
import { pushPayment } from '../../shared/payments/push';
import { QUEUES } from '../../shared/queues/names';
import { runPool } from '../bootstrap';
import { guardPushJob } from './job';

/**
 * provider-push: sends the push prompt of each new mobile-money payment through its provider,
 * once per payment (shared/payments/push.ts). Provider timeouts are retried with the queue's
 * exponential backoff; a killed worker's job is picked up again once its lock expires.
 */
const lockMs = getConfig().payments.paymentJobLockMs;

void runPool({
  name: 'provider-push',
  // mostly waiting on the provider's answer
  defaultConcurrency: 16,
  processor: {
    queue: QUEUES.providerPush,
    guard: guardPushJob,
    process: (ctx, data) => pushPayment(ctx, data.paymentId, ctx.log.child({ requestId: data.requestId, paymentId: data.paymentId })),
    workerOptions: { lockDuration: lockMs, stalledInterval: lockMs },
  },
});
