import type { ServiceContext } from '../context';
import { QUEUES } from '../queues/names';
import { overdueDeliveries } from './deliveries';
import { DELIVER_JOB } from './fanout';

/**
 * The safety net under the queue: a pending delivery long past due and not in flight has lost
 * its job (a job failed for good on an infrastructure error, Redis lost data, a sender died
 * twice). It gets a new one, named after its attempt so that copies of this sweep running
 * together add it once. Postgres decides what is pending; the claim makes a duplicate harmless.
 */
export async function requeueOverdue(ctx: ServiceContext, limit = 500): Promise<number> {
  const rows = await overdueDeliveries(ctx.db, ctx.config.webhooks.sweepGraceMs, limit);
  const queue = ctx.queues.get(QUEUES.webhookSender);
  let added = 0;
  for (const d of rows) {
    const jobId = `sweep-${d.id}-r${d.round}-a${d.attempts}`;
    const existing = await queue.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      // a finished job of that name would swallow the new one: clear it first
      if (state !== 'completed' && state !== 'failed') continue;
      await existing.remove();
    }
    await queue.add(DELIVER_JOB, { deliveryId: d.id, webhookId: d.webhook_id }, { jobId });
    added++;
  }
  if (added) ctx.log.warn({ added }, 'requeued overdue webhook deliveries');
  return added;
}
