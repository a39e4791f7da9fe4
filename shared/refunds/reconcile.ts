import type { ServiceContext } from '../context';
import { reconcileOpen, type OutgoingFlow } from '../outgoing/reconcile';
import { QUEUES } from '../queues/names';
import { findRefund, lockRefund, REFUNDS } from './rows';
import { applyToLockedRefund } from './transition';

/** Refunds as the reconciliation sweep sees them (shared/outgoing/reconcile.ts). */
export const refundFlow: OutgoingFlow = {
  kind: 'refund',
  table: REFUNDS,
  openStatuses: ['pending'],
  async find(db, id) {
    const r = await findRefund(db, id);
    return r && { environment: r.environment, provider: r.provider, sent: r.sent_at != null, open: r.status === 'pending' };
  },
  async resend(outbox, id) {
    await outbox.add(QUEUES.refund, 'send-refund', { refundId: id });
  },
  async apply(trx, outbox, id, v) {
    const r = (await lockRefund(trx, id))!;
    return applyToLockedRefund(trx, outbox, r, v.succeeded ? 'provider_succeeded' : 'provider_failed', v);
  },
};

export const reconcileOpenRefunds = (ctx: ServiceContext) => reconcileOpen(ctx, refundFlow);
