import type { WorkSource } from '../queues/redrive';
import { QUEUES } from '../queues/names';
import { DELIVER_JOB } from '../events/fanout';

/**
 * The re-drive's source of webhook deliveries (shared/queues/redrive.ts): a pending delivery past
 * due and not in flight whose job was lost (Redis lost its data, a job failed for good) gets a new
 * one for its round. Postgres decides what is pending; the attempt's claim makes a duplicate harmless.
 */
export const dueDeliveries: WorkSource = {
  name: 'deliveries',
  async find(db, { olderThan }, limit) {
    // pending, due before `olderThan`, not in flight, nor held by an open breaker until then
    const rows: { id: string; webhook_id: string; round: number }[] = await db('webhook_deliveries as d')
      .join('webhooks as w', 'w.id', 'd.webhook_id')
      .where('d.status', 'pending')
      .where('d.next_attempt_at', '<', olderThan)
      .where((q) => q.whereNull('d.lease_until').orWhere('d.lease_until', '<=', db.fn.now()))
      .where((q) => q.whereNull('w.breaker_open_until').orWhere('w.breaker_open_until', '<', olderThan))
      .orderBy('d.next_attempt_at')
      .limit(limit)
      .select('d.id', 'd.webhook_id', 'd.round', 'd.attempts');
    return rows.map((d) => ({ queue: QUEUES.webhookSender, job: DELIVER_JOB, data: { deliveryId: d.id, webhookId: d.webhook_id, round: d.round } }));
  },
};
