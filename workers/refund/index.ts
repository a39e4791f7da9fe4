// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { refundKind } from '../../shared/refunds/kind';
import { runPool } from '../bootstrap';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * refund: hands each new refund to the payment's provider, once per refund (the refund id is the
 * provider's idempotency key), and asks the provider about refunds still open past their window
 * (shared/operations). The outcome arrives by callback, applied by the callback-reconciler.
 */
void runPool({
  name: 'refund',
  processor: sendProcessor(refundKind),
  loops: [sweepLoop(refundKind)],
});
