import { raw } from 'objection';
import { OutboxRow } from '../db/models';
import { markOutboxEnqueued } from '../db/sql/outbox';
import { randomUUID } from 'node:crypto';
import type { Executor, Db } from '../db/knex';
import { poolCoalescer, type Coalescer } from '../db/coalescer';
import { inBatches } from './batch';
import type { QueueRegistry } from './registry';
import type { JobData, QueueName } from './names';
import type { Logger } from '../logger';
import { withTimeout } from '../timeout';
import { traceparentNow } from '../tracing/spans';

/**
 * Outbox (architecture rule 1): a job that follows from a database change is written as a row
 * in the same transaction. After commit the writer enqueues it at once (jobId = outbox id); the
 * outbox-relay pool enqueues whatever was missed. A job never exists for a row that did not
 * commit, and no committed change loses its job.
 */

export interface OutboxMessage {
  id: string;
  queue: QueueName;
  job_name: string;
  payload: JobData;
  delay_ms: number;
  /**
   * The trace context of the span that wrote the row (W3C traceparent; null with traces off):
   * its job, enqueued now or by the relay later, continues that trace (shared/tracing).
   */
  traceparent: string | null;
}

/**
 * A new outbox message (not yet written). Its trace context is the caller's active span: made
 * in the request's or the job's own context (not in a batch shared with others), or given.
 */
export function outboxMessage(queue: QueueName, jobName: string, payload: JobData, delayMs = 0, traceparent = traceparentNow()): OutboxMessage {
  return { id: randomUUID(), queue, job_name: jobName, payload, delay_ms: delayMs, traceparent };
}

/** The job's data: the payload, and the trace context when there is one (read by QueueRegistry and the batch runner). */
export function outboxJobData(msg: Pick<OutboxMessage, 'payload' | 'traceparent'>): JobData {
  return msg.traceparent ? { ...msg.payload, traceparent: msg.traceparent } : msg.payload;
}

export async function writeOutbox(
  trx: Executor,
  queue: QueueName,
  jobName: string,
  payload: JobData,
  delayMs = 0,
): Promise<OutboxMessage> {
  const msg = outboxMessage(queue, jobName, payload, delayMs);
  // every flow's jobs pass here (callbacks included): the knex builder, ~40 µs less CPU than the model
  await trx('outbox').insert({ ...msg, payload: JSON.stringify(msg.payload) });
  return msg;
}

/** jobId of an outbox message: its uuid (no ':' and not all digits, as BullMQ requires). */
export const outboxJobId = (id: string) => `ob-${id}`;

const jobOptions = (msg: OutboxMessage) => ({ jobId: outboxJobId(msg.id), delay: msg.delay_ms || undefined });

async function enqueue(queues: QueueRegistry, msg: OutboxMessage): Promise<void> {
  await queues.add(msg.queue, msg.job_name, outboxJobData(msg), jobOptions(msg));
}

/** Many messages, one pipeline per queue; those that may travel together in batches (shared/queues/batch.ts). */
async function enqueueMany(queues: QueueRegistry, msgs: OutboxMessage[]): Promise<void> {
  const byQueue = new Map<QueueName, OutboxMessage[]>();
  for (const m of msgs) byQueue.set(m.queue, [...(byQueue.get(m.queue) ?? []), m]);
  await Promise.all(
    [...byQueue].map(([queue, ms]) =>
      queues.addMany(queue, inBatches(queue, ms.map((m) => ({ id: m.id, jobName: m.job_name, data: outboxJobData(m), opts: jobOptions(m) })))),
    ),
  );
}

/**
 * The publications of concurrent callers (requests, jobs) of one registry share one pipeline per
 * queue (shared/db/coalescer.ts: at once when Redis is idle, together when it is busy).
 */
function publisher(queues: QueueRegistry): Coalescer<OutboxMessage[], void> {
  return poolCoalescer<OutboxMessage[], void>(
    queues,
    'outbox-publish',
    async (publications) => {
      await enqueueMany(queues, publications.flat());
      return publications.map(() => undefined);
    },
  );
}

const PUBLISH_TIMEOUT_MS = 2000;

/**
 * Enqueues messages just committed and marks them; a failure (Redis down) is logged and left to
 * the relay, so the caller's answer never depends on Redis being up.
 */
export async function publishOutbox(db: Db, queues: QueueRegistry, msgs: OutboxMessage[], log?: Logger): Promise<void> {
  if (msgs.length === 0) return;
  try {
    if (!queues.isReady()) throw new Error('redis is not connected');
    await withTimeout(publisher(queues).call(msgs), PUBLISH_TIMEOUT_MS);
    markEnqueued(db, msgs.map((m) => m.id), log);
  } catch (err) {
    log?.warn({ err, outbox: msgs.map((m) => m.id) }, 'outbox publish deferred to the relay');
  }
}

/** How long rows published after commit wait to be marked enqueued together (inside the relay's 1 s grace). */
const MARK_BATCH_MS = 100;
const MARK_BATCH_MAX = 500;
const batchedMarks = new Map<Db, { ids: string[]; timer: NodeJS.Timeout; log?: Logger }>();

/**
 * Marks published rows as enqueued, in batches: one UPDATE every MARK_BATCH_MS (or per
 * MARK_BATCH_MAX rows), not one per request. A mark that comes late or is lost (crash) only lets
 * the relay enqueue the row again under the same job id, and every job is safe to run twice.
 */
function markEnqueued(db: Db, ids: string[], log?: Logger): void {
  let batch = batchedMarks.get(db);
  if (!batch) {
    batch = { ids: [], timer: setTimeout(() => void flushMarks(db), MARK_BATCH_MS), log };
    batchedMarks.set(db, batch);
  }
  batch.ids.push(...ids);
  if (batch.ids.length >= MARK_BATCH_MAX) void flushMarks(db);
}

async function flushMarks(db: Db): Promise<void> {
  const batch = batchedMarks.get(db);
  if (!batch) return;
  batchedMarks.delete(db);
  clearTimeout(batch.timer);
  try {
    await markOutboxEnqueued(db, batch.ids);
  } catch (err) {
    batch.log?.warn({ err: { message: (err as Error).message }, count: batch.ids.length }, 'outbox marks lost; the relay will enqueue those rows again');
  }
}

/** Writes the batched marks of `db` now (on shutdown, before its pool closes). */
export async function flushOutboxMarks(db: Db): Promise<void> {
  await flushMarks(db);
}

/**
 * Relays messages that were committed but not enqueued (older than `graceMs`, so the writer has
 * had its chance). Safe with many relay copies: rows are claimed with SKIP LOCKED.
 */
export async function relayOutbox(db: Db, queues: QueueRegistry, graceMs = 1000, batch = 500): Promise<number> {
  return db.transaction(async (trx) => {
    const rows: OutboxMessage[] = await OutboxRow.query(trx)
      .whereNull('enqueued_at')
      .where('created_at', '<', raw(`now() - make_interval(secs => ?)`, [graceMs / 1000]))
      .orderBy('created_at')
      .limit(batch)
      .forUpdate()
      .skipLocked();
    if (rows.length === 0) return 0;
    for (const row of rows) await enqueue(queues, row);
    await OutboxRow.query(trx).whereIn('id', rows.map((r) => r.id)).patch({ enqueued_at: raw('now()') });
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
