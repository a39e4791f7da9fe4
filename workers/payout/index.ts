// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { payoutKind } from '../../shared/payouts/kind';
import { runPool } from '../bootstrap';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * payout: hands each new payout to its provider, once per payout (the payout id is the provider's
 * idempotency key), marking it processing, and asks the provider about payouts still open past
 * their window (shared/operations). The outcome arrives by callback, applied by the
 * callback-reconciler.
 */
void runPool({
  name: 'payout',
  processor: sendProcessor(payoutKind),
  loops: [sweepLoop(payoutKind)],
});
