import type { WorkSource } from '../queues/redrive';
import { dueDeliveryRows } from '../db/sql/webhookDeliveries';
import { QUEUES } from '../queues/names';
import { DELIVER_JOB } from './fanout';

/**
 * The re-drive's source of webhook deliveries (shared/queues/redrive.ts): a pending delivery past
 * due and not in flight whose job was lost (Redis lost its data, a job failed for good) gets a new
 * one for its round. Postgres decides what is pending; the attempt's claim makes a duplicate harmless.
 */
export const dueDeliveries: WorkSource = {
  name: 'deliveries',
  async find(db, { olderThan }, limit) {
    const rows = await dueDeliveryRows(db, olderThan, limit);
    return rows.map((d) => ({
      queue: QUEUES.webhookSender,
      job: DELIVER_JOB,
      data: { deliveryId: d.id, webhookId: d.webhook_id, round: d.round },
    }));
  },
};
