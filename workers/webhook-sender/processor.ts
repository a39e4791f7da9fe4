import { UnrecoverableError } from 'bullmq';
import { later, type PoolProcessor } from '../bootstrap';
import type { ServiceContext } from '../../shared/context';
import { isId } from '../../shared/ids';
import { QUEUES } from '../../shared/queues/names';
import { webhookSender } from '../../shared/webhooks/sender';

/**
 * webhook-sender: one job per delivery (or a batch: shared/queues/batch.ts), which sleeps (delayed)
 * between attempts and while it waits; a delivery that came in a batch gets a delayed job of its own.
 */

export interface DeliverJob {
  deliveryId: string;
  webhookId: string;
}

export function guardDeliverJob(data: unknown): DeliverJob {
  const d = data as Partial<DeliverJob> | null;
  if (
    !d ||
    typeof d.deliveryId !== 'string' ||
    !isId('delivery', d.deliveryId) ||
    typeof d.webhookId !== 'string' ||
    !isId('webhook', d.webhookId)
  ) {
    throw new UnrecoverableError('webhook-sender job needs a deliveryId (whd_) and a webhookId (wh_)');
  }
  return { deliveryId: d.deliveryId, webhookId: d.webhookId };
}

/** The processor of a pool, with its sender built once at start-up. */
export function webhookSenderProcessor(ctx: ServiceContext): PoolProcessor<DeliverJob> {
  const deliver = webhookSender(ctx);
  return {
    queue: QUEUES.webhookSender,
    guard: guardDeliverJob,
    async process(_ctx, data) {
      const outcome = await deliver(data.deliveryId, data.webhookId);
      // a wait spends no attempt: the job sleeps until its next chance (workers/bootstrap.ts)
      return outcome.kind === 'done' ? outcome.reason : later(outcome.delayMs, outcome.reason);
    },
    // a killed sender's job (its delivery's only live job) is picked up again within 15 s
    workerOptions: { lockDuration: 10_000, stalledInterval: 5_000 },
  };
}
