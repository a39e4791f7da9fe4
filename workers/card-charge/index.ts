// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { cardPaymentKind } from '../../shared/cards/kind';
import { runPool } from '../bootstrap';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * card-charge: charges each posted token once (the payment id is the acquirer's idempotency key)
 * and sweeps card payments past their window. Any number of copies may run.
 */
void runPool({
  name: 'card-charge',
  // mostly waiting on the acquirer's answer
  defaultConcurrency: 16,
  processor: sendProcessor(cardPaymentKind),
  loops: [sweepLoop(cardPaymentKind)],
});
