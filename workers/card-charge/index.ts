// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { cardPaymentKind } from '../../shared/cards/kind';
import { retentionLoop, runPool } from '../bootstrap';
import { purgeCardAttempts } from '../../shared/retention';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * card-charge: charges each posted token once (the payment id is the acquirer's idempotency key)
 * and sweeps card payments past their window; purges the checkout attempts of final payments past
 * their retention. Any number of copies may run.
 */
void runPool({
  name: 'card-charge',
  // mostly waiting on the acquirer's answer
  defaultConcurrency: 16,
  processor: sendProcessor(cardPaymentKind),
  loops: [
    sweepLoop(cardPaymentKind),
    // retention (shared/retention.ts): the checkout attempts of final card payments, past 90 days
    retentionLoop(async (ctx) => ({ cardAttempts: await purgeCardAttempts(ctx.db, { now: ctx.clock.now() }) })),
  ],
});
