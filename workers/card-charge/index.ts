// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { getConfig } from '../../shared/config';
import { cardPaymentKind } from '../../shared/cards/kind';
import { runPool } from '../bootstrap';
import { sendProcessor, sweepLoop } from '../operations';

/**
 * card-charge: charges each card payment's token through its acquirer, once per payment (the
 * payment id is the acquirer's idempotency key; shared/operations/send.ts), and sweeps the card
 * payments past their checkout or 3-D Secure window (the acquirer is asked; a payment it has no
 * outcome for is cancelled). Any number of copies may run.
 */
void runPool({
  name: 'card-charge',
  // mostly waiting on the acquirer's answer
  defaultConcurrency: 16,
  processor: sendProcessor(cardPaymentKind, getConfig().payments.paymentJobLockMs),
  loops: [sweepLoop(cardPaymentKind)],
});
