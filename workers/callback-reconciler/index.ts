// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { QUEUES } from '../../shared/queues/names';
import { retentionLoop, runPool } from '../bootstrap';
import { purgeCallbackBodies } from '../../shared/retention';
import { guardCallbackJob } from './job';
import { KINDS } from '../../shared/kindRegistry';
import { inSpan } from '../../shared/tracing/spans';

/**
 * callback-reconciler: applies each stored provider callback through the operations kernel
 * (shared/operations/callbacks.ts); callbacks whose job was lost are given one again by the
 * outbox-relay's re-drive. Any number of copies may run.
 */
void runPool({
  name: 'callback-reconciler',
  // each job is a chain of short statements: more in flight hides their round trips
  defaultConcurrency: 16,
  processor: {
    queue: QUEUES.callbackReconciler,
    guard: guardCallbackJob,
    async process(ctx, data) {
      // the callbacks of one job are applied together: their reads and writes are shared statements
      const settled = await Promise.allSettled(
        // with traces on, each callback's transition is a span of its payment's trace: the job's
        // own, or (callbacks stored together) the callback's request's
        data.callbackIds.map((callbackId: string, i: number) =>
          inSpan(
            'apply-callback',
            { parent: data.traceparents?.[i] || undefined, attributes: { 'svc_payments.callback.id': callbackId } },
            async (span) => {
              const log = ctx.log.child({ requestId: data.requestId, callbackId });
              const { outcome, callback } = await applyStoredCallback(ctx, KINDS, callbackId, log, data.kind);
              const facts = {
                outcome,
                kind: callback?.kind,
                objectId: callback?.objectId,
                status: callback?.status,
                provider: callback?.provider,
              };
              span({
                'svc_payments.callback.outcome': outcome,
                'svc_payments.operation.kind': callback?.kind,
                'svc_payments.operation.id': callback?.objectId,
                'svc_payments.callback.status': callback?.status,
                'svc_payments.provider': callback?.provider,
              });
              // anything but a clean application is worth an operator's eye
              if (outcome === 'applied' || outcome === 'already-processed') log.info(facts, 'callback processed');
              else log.warn(facts, 'callback recorded without effect');
              return outcome;
            },
          ),
        ),
      );
      // one that failed fails the job: it runs again, and the callbacks already applied are found processed
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      const outcomes = settled.map((s) => (s as PromiseFulfilledResult<string>).value);
      return outcomes.length === 1 ? outcomes[0] : outcomes;
    },
  },
  loops: [
    retentionLoop(async (ctx) => ({ callbackBodies: await purgeCallbackBodies(ctx.db, { now: ctx.clock.now() }) })),
  ],
});
