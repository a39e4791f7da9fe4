import type { ServiceContext } from '../context';
import { reconcileOpen, type OutgoingFlow } from '../outgoing/reconcile';
import { QUEUES } from '../queues/names';
import { findPayout, lockPayout, PAYOUTS } from './rows';
import { applyToLockedPayout } from './transition';

/** Payouts as the reconciliation sweep sees them (shared/outgoing/reconcile.ts). */
export const payoutFlow: OutgoingFlow = {
  kind: 'payout',
  table: PAYOUTS,
  openStatuses: ['pending', 'processing'],
  async find(db, id) {
    const p = await findPayout(db, id);
    return p && { environment: p.environment, provider: p.provider, sent: p.status === 'processing', open: p.status === 'pending' || p.status === 'processing' };
  },
  async resend(outbox, id) {
    await outbox.add(QUEUES.payout, 'send-payout', { payoutId: id });
  },
  async apply(trx, outbox, id, v) {
    const p = (await lockPayout(trx, id))!;
    return applyToLockedPayout(trx, outbox, p, v.succeeded ? 'provider_succeeded' : 'provider_failed', v);
  },
};

export const reconcileOpenPayouts = (ctx: ServiceContext) => reconcileOpen(ctx, payoutFlow);
