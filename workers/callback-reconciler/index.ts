import { getConfig } from '../../shared/config';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { paymentKind } from '../../shared/payments/kind';
import { staleCallbacks } from '../../shared/providers/inbox';
import { QUEUES } from '../../shared/queues/names';
import { runPool } from '../bootstrap';
import { sweepLoop } from '../operations';
import { guardCallbackJob } from './job';

/**
 * callback-reconciler: applies each stored provider callback through the operations kernel
 * (shared/operations/callbacks.ts), and sweeps the payments past their window and the callbacks
 * the queue lost. Any number of copies may run.
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
      const { outcome, callback } = await applyStoredCallback(ctx, data.callbackId, log);
      const facts = { outcome, kind: callback?.kind, objectId: callback?.objectId, status: callback?.status, provider: callback?.provider };
      // anything but a clean application is worth an operator's eye
      if (outcome === 'applied' || outcome === 'already-processed') log.info(facts, 'callback processed');
      else log.warn(facts, 'callback recorded without effect');
      return outcome;
    },
    workerOptions: { lockDuration: lockMs, stalledInterval: lockMs },
  },
  loops: [
    {
      name: 'stale-callbacks',
      intervalMs: (ctx) => ctx.config.askIntervalMs,
      run: async (ctx) => {
        // well past the queue's first retries (STALE_CALLBACK_MS), so this only picks up what the queue lost or gave up on
        for (const id of await staleCallbacks(ctx.db, ctx.config.payments.staleCallbackMs)) {
          // one callback that cannot be applied must not hold back the others behind it
          try {
            const { outcome } = await applyStoredCallback(ctx, id);
            ctx.log.warn({ callbackId: id, outcome }, 'stale callback applied by the sweep');
          } catch (err) {
            ctx.log.error({ callbackId: id, err: { message: (err as Error).message } }, 'stale callback could not be applied');
          }
        }
      },
    },
    sweepLoop(paymentKind),
  ],
});
