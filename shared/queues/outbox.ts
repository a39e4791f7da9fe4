import { raw } from 'objection';
import { OutboxRow } from '../db/models';
import { anyOutboxMissed, claimMissedOutbox, insertOutbox, markOutboxEnqueued } from '../db/sql/outbox';
import { randomUUID } from 'node:crypto';
import type { Executor, Db } from '../db/knex';
import { Coalescer } from '../db/coalescer';
import { inBatches } from './batch';
import type { QueueRegistry } from './registry';
import type { JobData, QueueName } from './names';
import type { OutboxMessage } from '../db/rows';
import type { Logger } from '../logger';
import { withTimeout } from '../timeout';
import { traceparentNow } from '../tracing/spans';

/**
 * Outbox (docs/decisions.md#provider-operations): a job that follows from a database change is written as a row
 * in the same transaction. After commit the writer enqueues it at once (jobId = outbox id); the
 * outbox-relay pool enqueues whatever was missed. A job never exists for a row that did not
 * commit, and no committed change loses its job.
 */

export type { OutboxMessage };

/**
 * A new outbox message (not yet written). Its trace context is the caller's active span: made
 * in the request's or the job's own context (not in a batch shared with others), or given.
 */
export function outboxMessage(
  queue: QueueName,
  jobName: string,
  payload: JobData,
  delayMs = 0,
  traceparent = traceparentNow(),
): OutboxMessage {
  return { id: randomUUID(), queue, job_name: jobName, payload, delay_ms: delayMs, traceparent };
}

/** The job's data: the payload, and the trace context when there is one (read by QueueRegistry and the batch runner). */
export function outboxJobData(msg: Pick<OutboxMessage, 'payload' | 'traceparent'>): JobData {
  return msg.traceparent ? { ...msg.payload, traceparent: msg.traceparent } : msg.payload;
}

/** Writes a new message in the caller's transaction (shared/db/transact.ts's OutboxWriter). */
export async function writeOutbox(
  trx: Executor,
  queue: QueueName,
  jobName: string,
  payload: JobData,
  delayMs = 0,
): Promise<OutboxMessage> {
  const msg = outboxMessage(queue, jobName, payload, delayMs);
  await insertOutbox(trx, [msg]);
  return msg;
}

/** jobId of an outbox message: its uuid (no ':' and not all digits, as BullMQ requires). */
export const outboxJobId = (id: string) => `ob-${id}`;

const jobOptions = (msg: OutboxMessage) => ({ jobId: outboxJobId(msg.id), delay: msg.delay_ms || undefined });

/** Many messages, one pipeline per queue; those that may travel together in batches (shared/queues/batch.ts). */
async function enqueueMany(queues: QueueRegistry, msgs: OutboxMessage[]): Promise<void> {
  const byQueue = new Map<QueueName, OutboxMessage[]>();
  for (const m of msgs) byQueue.set(m.queue, [...(byQueue.get(m.queue) ?? []), m]);
  await Promise.all(
    [...byQueue].map(([queue, ms]) =>
      queues.addMany(
        queue,
        inBatches(
          queue,
          ms.map((m) => ({ id: m.id, jobName: m.job_name, data: outboxJobData(m), opts: jobOptions(m) })),
        ),
      ),
    ),
  );
}

const PUBLISH_TIMEOUT_MS = 2000;
/**
 * How long rows published after commit wait to be marked enqueued together, inside the relay's
 * 1 s grace: at 20 payments a second a process marks twice a second, not ten times.
 */
const MARK_BATCH_MS = 500;
const MARK_BATCH_MAX = 500;

/**
 * The process's publisher of committed outbox rows (one per service context, which closes it).
 * Concurrent publications share one pipeline per queue (shared/db/coalescer.ts), and rows are
 * marked enqueued in batches (one UPDATE per MARK_BATCH_MS or MARK_BATCH_MAX rows). A mark that
 * comes late or is lost (crash) only lets the relay enqueue the row again under the same job id,
 * and every job is safe to run twice.
 */
export class OutboxPublisher {
  private readonly enqueues: Coalescer<OutboxMessage[], void>;
  private marks: { ids: string[]; timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly db: Db,
    readonly queues: QueueRegistry,
    private readonly log: Logger,
  ) {
    this.enqueues = new Coalescer(async (publications: OutboxMessage[][]) => {
      await enqueueMany(queues, publications.flat());
      return publications.map((): void => undefined);
    });
  }

  /**
   * Enqueues messages just committed and marks them; a failure (Redis down) is logged and left
   * to the relay, so the caller's answer never depends on Redis being up.
   */
  async publish(msgs: OutboxMessage[], log: Logger = this.log): Promise<void> {
    if (msgs.length === 0) return;
    try {
      if (!this.queues.isReady()) throw new Error('redis is not connected');
      await withTimeout(this.enqueues.call(msgs), PUBLISH_TIMEOUT_MS);
      this.markEnqueued(msgs.map((m) => m.id));
    } catch (err) {
      log.warn({ err, outbox: msgs.map((m) => m.id) }, 'outbox publish deferred to the relay');
    }
  }

  private markEnqueued(ids: string[]): void {
    this.marks ??= { ids: [], timer: setTimeout(() => void this.flushMarks(), MARK_BATCH_MS) };
    this.marks.ids.push(...ids);
    if (this.marks.ids.length >= MARK_BATCH_MAX) void this.flushMarks();
  }

  /** Writes the batched marks now (on close, before the pool closes). */
  async flushMarks(): Promise<void> {
    const batch = this.marks;
    if (!batch) return;
    this.marks = undefined;
    clearTimeout(batch.timer);
    try {
      await markOutboxEnqueued(this.db, batch.ids);
    } catch (err) {
      this.log.warn(
        { err: { message: (err as Error).message }, count: batch.ids.length },
        'outbox marks lost; the relay will enqueue those rows again',
      );
    }
  }
}

/**
 * Relays messages that were committed but not enqueued (older than `graceMs`, so the writer has
 * had its chance). Safe with many relay copies: rows are claimed with SKIP LOCKED.
 */
export async function relayOutbox(db: Db, queues: QueueRegistry, graceMs = 1000, batch = 500): Promise<number> {
  // nearly always nothing is missed: the probe says so without a transaction's three round trips
  if (!(await anyOutboxMissed(db, graceMs / 1000))) return 0;
  return db.transaction(async (trx) => {
    const rows = await claimMissedOutbox(trx, graceMs / 1000, batch);
    if (rows.length === 0) return 0;
    for (const row of rows) await queues.add(row.queue, row.job_name, outboxJobData(row), jobOptions(row));
    await markOutboxEnqueued(
      trx,
      rows.map((r) => r.id),
    );
    return rows.length;
  });
}

/** Removes relayed rows older than `keepHours`. */
export async function pruneOutbox(db: Db, keepHours = 24): Promise<number> {
  return OutboxRow.query(db)
    .whereNotNull('enqueued_at')
    .where('enqueued_at', '<', raw(`now() - make_interval(hours => ?)`, [keepHours]))
    .delete();
}
