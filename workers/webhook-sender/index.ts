// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { retentionLoop, runPool } from '../bootstrap';
import { purgeAttemptExcerpts } from '../../shared/retention';
import { pruneFinished } from '../../shared/webhooks/deliveries';
import { webhookSenderProcessor } from './processor';

/**
 * webhook-sender: delivers events to merchant endpoints (docs/decisions.md#webhooks). Any number of copies may run:
 * attempts are claimed in Postgres, and the per-endpoint bound is shared through Redis.
 */
void runPool({
  name: 'webhook-sender',
  // mostly waiting on merchants' endpoints: more attempts in flight than the other pools
  defaultConcurrency: 50,
  processor: webhookSenderProcessor,
  loops: [
    {
      name: 'prune-deliveries',
      intervalMs: () => 3600_000,
      run: async (ctx) => {
        let pruned = 0;
        let n: number;
        do {
          n = await pruneFinished(ctx.db);
          pruned += n;
        } while (n > 0);
        if (pruned) ctx.log.info({ pruned }, 'pruned finished webhook deliveries older than 30 days');
      },
    },
    retentionLoop(async (ctx) => ({ attemptExcerpts: await purgeAttemptExcerpts(ctx.db, { now: ctx.clock.now() }) })),
  ],
});
