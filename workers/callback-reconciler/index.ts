import { getConfig } from '../../shared/config';
import { sweepExpiredPayments } from '../../shared/payments/sweep';
import { processCallback, staleCallbacks } from '../../shared/providers/inbox';
import { providers } from '../../shared/providers/registry';
import { QUEUES } from '../../shared/queues/names';
import { runPool } from '../bootstrap';
import { callbackHandlers } from './handlers';
import { guardCallbackJob } from './job';

/**
 * callback-reconciler: applies each stored provider callback through its object's state machine
 * (shared/providers/inbox.ts), and sweeps the payments past their provider window
 * (shared/payments/sweep.ts) and the callbacks the queue lost. Any number of copies may run.
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
      const registry = providers(ctx.config);
      const { outcome, callback } = await processCallback({ db: ctx.db, queues: ctx.queues, log }, data.callbackId, callbackHandlers, (id) => registry.byProviderId(id));
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
      intervalMs: (ctx) => ctx.config.reconcileIntervalMs,
      run: async (ctx) => {
        const registry = providers(ctx.config);
        const deps = { db: ctx.db, queues: ctx.queues, log: ctx.log };
        // well past the queue's first retries (STALE_CALLBACK_MS), so this only picks up what the queue lost or gave up on
        for (const id of await staleCallbacks(ctx.db, ctx.config.payments.staleCallbackMs)) {
          // one callback that cannot be applied must not hold back the others behind it
          try {
            const { outcome } = await processCallback(deps, id, callbackHandlers, (p) => registry.byProviderId(p));
            ctx.log.warn({ callbackId: id, outcome }, 'stale callback applied by the sweep');
          } catch (err) {
            ctx.log.error({ callbackId: id, err: { message: (err as Error).message } }, 'stale callback could not be applied');
          }
        }
      },
    },
    {
      name: 'expired-payments-sweep',
      intervalMs: (ctx) => ctx.config.reconcileIntervalMs,
      run: async (ctx) => {
        const counts = await sweepExpiredPayments(ctx);
        if (Object.keys(counts).length) ctx.log.info({ counts }, 'expired payments swept');
      },
    },
  ],
});
