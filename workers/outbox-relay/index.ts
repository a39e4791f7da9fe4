// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { retentionLoop, runPool } from '../bootstrap';
import { relayOutbox, pruneOutbox } from '../../shared/queues/outbox';
import { redrive, type WorkSource } from '../../shared/queues/redrive';
import { purgeExpiredIdempotencyKeys } from '../../shared/idempotency';
import { pruneProviderHealth } from '../../shared/operations/health';
import { KINDS } from '../../shared/kindRegistry';
import { unsentOperations } from '../../shared/operations/send';
import { unappliedCallbacks } from '../../shared/providers/inbox';
import { purgeExpiredSignatures } from '../../shared/requestSignatures';
import { dueDeliveries } from '../../shared/webhooks/sweep';
import { ensurePartitions } from '../../shared/db/partitions';

/** Every kind of open work Postgres knows, for the re-drive: sends, callbacks, deliveries. */
const OPEN_WORK: WorkSource[] = [...Object.values(KINDS).map(unsentOperations), unappliedCallbacks, dueDeliveries];

/**
 * outbox-relay: gives a job to all open work that has none. It enqueues committed outbox rows
 * that missed their immediate enqueue (crash or Redis outage between commit and enqueue), and
 * re-drives open work whose job Redis lost (shared/queues/redrive.ts); it also runs the
 * housekeeping purges. Any number of copies may run: rows are claimed with SKIP LOCKED, a
 * re-driven job is folded into the work's live one, purges are plain deletes, and partitions are
 * created under an advisory lock. Its loops are timers of this process, so they outlive any loss
 * of Redis's data.
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
      name: 'redrive',
      intervalMs: (ctx) => ctx.config.redrive.intervalMs,
      run: (ctx) =>
        redrive(
          { db: ctx.db, queues: ctx.queues, now: ctx.clock.now(), graceMs: ctx.config.redrive.graceMs, log: ctx.log },
          OPEN_WORK,
        ),
    },
    {
      name: 'housekeeping',
      intervalMs: () => 60_000,
      run: async (ctx) => {
        const outbox = await pruneOutbox(ctx.db);
        const providerHealth = await pruneProviderHealth(ctx.db, ctx.clock.now());
        if (outbox || providerHealth) ctx.log.info({ outbox, providerHealth }, 'purged expired rows');
      },
    },
    // the history tables' partitions (shared/db/partitions.ts), 12 months ahead of the service
    // clock: idempotent, and two copies at once take turns (an advisory lock per table)
    {
      name: 'partitions',
      intervalMs: (ctx) => ctx.config.partitionsIntervalMs,
      run: async (ctx) => {
        const created = await ensurePartitions(ctx.db, ctx.clock.now());
        if (created.length) ctx.log.info({ created }, 'created history partitions ahead');
      },
    },
    // retention (shared/retention.ts): the API's log-like rows, expired
    retentionLoop(async (ctx) => ({
      idempotency: await purgeExpiredIdempotencyKeys(ctx.db, ctx.clock.now()),
      signatures: await purgeExpiredSignatures(ctx.db, ctx.clock.now()),
    })),
  ],
});
