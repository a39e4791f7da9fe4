import { UnrecoverableError } from 'bullmq';
import { isId, type IdKind } from '../shared/ids';
import type { OperationKind } from '../shared/operations/kind';
import { sendOnce } from '../shared/operations/send';
import { sweepOpen } from '../shared/operations/sweep';
import type { PoolLoop, PoolProcessor } from './bootstrap';
import { inSpan } from '../shared/tracing/spans';

/**
 * The two pieces of work every provider operation needs from a pool: a job that sends it to its
 * provider once (provider-push for payments, refund, payout), and the sweep of what stays open
 * past its window. Both run the operations kernel (shared/operations) for the pool's kind.
 */

/** A send job's payload: the operation's id only, under the kind's field (paymentId, refundId, payoutId). */
export function sendProcessor(kind: OperationKind<any, any, any>): PoolProcessor<{ id: string; requestId?: string }> {
  const field = kind.send.idField;
  const idKind = kind.idKind ?? (kind.name as IdKind);
  return {
    queue: kind.send.queue,
    guard: (data) => {
      const d = data as Record<string, unknown> | null;
      const id = d?.[field];
      if (typeof id !== 'string' || !isId(idKind, id))
        throw new UnrecoverableError(`${kind.send.queue} job without a valid ${field}`);
      return { id, requestId: typeof d!.requestId === 'string' ? d!.requestId : undefined };
    },
    // with traces on, a span naming the operation: its trace is found by its id
    process: (ctx, data) =>
      inSpan(
        `send ${kind.name}`,
        { attributes: { 'svc_payments.operation.kind': kind.name, 'svc_payments.operation.id': data.id } },
        async (facts) => {
          const result = await sendOnce(
            ctx,
            kind,
            data.id,
            ctx.log.child({ requestId: data.requestId, [kind.send.idField]: data.id }),
          );
          facts({ 'svc_payments.send.result': result });
          return result;
        },
      ),
  };
}

export function sweepLoop(kind: OperationKind<any, any, any>): PoolLoop {
  return {
    name: `open-${kind.name}s-sweep`,
    intervalMs: (ctx) => ctx.config.askIntervalMs,
    run: async (ctx) => {
      const counts = await sweepOpen(ctx, kind);
      if (Object.keys(counts).length)
        ctx.log.info({ kind: kind.name, counts }, 'open operations past their window swept');
    },
  };
}
