// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { mobileMoneyPaymentKind } from '../../shared/payments/kind';
import { runPool } from '../bootstrap';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * provider-push: sends the push prompt of each new mobile-money payment through its provider,
 * once per payment (shared/operations/send.ts), and sweeps the payments past their window, as
 * every pool that sends a kind sweeps it. Provider timeouts are retried with the queue's
 * exponential backoff.
 */
void runPool({
  name: 'provider-push',
  // mostly waiting on the provider's answer
  defaultConcurrency: 16,
  processor: sendProcessor(mobileMoneyPaymentKind),
  loops: [sweepLoop(mobileMoneyPaymentKind)],
});
