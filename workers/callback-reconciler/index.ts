import { getConfig } from '../../shared/config';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { paymentKind } from '../../shared/payments/kind';
import { QUEUES } from '../../shared/queues/names';
import { runPool } from '../bootstrap';
import { sweepLoop } from '../operations';
import { guardCallbackJob } from './job';

/**
 * callback-reconciler: applies each stored provider callback through the operations kernel
 * (shared/operations/callbacks.ts), and sweeps the payments past their window (callbacks whose
 * job was lost are given one again by the outbox-relay's re-drive). Any number of copies may run.
 */
const lockMs = getConfig().payments.paymentJobLockMs;

void runPool({
  name: 'callback-reconciler',
  // each job is a chain of short statements: more in flight hides their round trips
  defaultConcurrency: 16,
  processor: {
    queue: QUEUES.callbackReconciler,
    guard: guardCallbackJob,
    async process(ctx, data) {
      const log = ctx.log.child({ requestId: data.requestId, callbackId: data.callbackId });
      const { outcome, callback } = await applyStoredCallback(ctx, data.callbackId, log, data.kind);
      const facts = { outcome, kind: callback?.kind, objectId: callback?.objectId, status: callback?.status, provider: callback?.provider };
      // anything but a clean application is worth an operator's eye
      if (outcome === 'applied' || outcome === 'already-processed') log.info(facts, 'callback processed');
      else log.warn(facts, 'callback recorded without effect');
      return outcome;
    },
    workerOptions: { lockDuration: lockMs, stalledInterval: lockMs },
  },
  loops: [
    sweepLoop(paymentKind),
  ],
});
