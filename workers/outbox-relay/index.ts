import { runPool } from '../bootstrap';
import { relayOutbox, pruneOutbox } from '../../shared/queues/outbox';
import { purgeExpiredIdempotencyKeys } from '../../shared/idempotency';
import { pruneProviderHealth } from '../../shared/operations/health';

/**
 * outbox-relay: enqueues committed outbox rows that missed their immediate enqueue (crash or
 * Redis outage between commit and enqueue), and runs the housekeeping purges. Any number of
 * copies may run: rows are claimed with SKIP LOCKED and purges are plain deletes.
 */
void runPool({
  name: 'outbox-relay',
  loops: [
    {
      name: 'relay',
      intervalMs: (ctx) => ctx.config.outboxRelayIntervalMs,
      run: async (ctx) => {
        let n: number;
        do n = await relayOutbox(ctx.db, ctx.queues, ctx.config.outboxRelayIntervalMs);
        while (n > 0);
      },
    },
    {
      name: 'housekeeping',
      intervalMs: () => 60_000,
      run: async (ctx) => {
        const outbox = await pruneOutbox(ctx.db);
        const idempotency = await purgeExpiredIdempotencyKeys(ctx.db);
        const providerHealth = await pruneProviderHealth(ctx.db, ctx.clock.now());
        if (outbox || idempotency || providerHealth) ctx.log.info({ outbox, idempotency, providerHealth }, 'purged expired rows');
      },
    },
  ],
});
