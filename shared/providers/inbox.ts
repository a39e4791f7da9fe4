import { randomUUID } from 'node:crypto';
import { InboxCallback } from '../db/models';
import type { TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
import type { Logger } from '../logger';
import { outboxMessage, type OutboxMessage } from '../queues/outbox';
import type { WorkSource } from '../queues/redrive';
import type { Batches } from '../db/coalescer';
import { insertCallbacksWithJobs, type InboxRow } from '../db/sql/callbacks';
import type { ProviderBase, ProviderCallback } from './types';
import { traceparentNow } from '../tracing/spans';

/**
 * Inbox of provider callbacks (architecture rule 2). The web process stores a verified callback
 * raw, with the job that applies it, and answers at once; the callback-reconciler applies each
 * stored callback exactly once, through the operations kernel (shared/operations/callbacks.ts), and records the outcome.
 */

const APPLY_CALLBACK_JOB = 'apply-callback';

/** The most callbacks one callback-reconciler job names. */
export const CALLBACKS_PER_JOB = 100;

interface Arrival {
  row: InboxRow;
  requestId?: string;
  log?: Logger;
  /** the trace context of the callback's request (shared/tracing), taken in its own context */
  traceparent: string | null;
}

/**
 * The jobs that apply stored callbacks: a lone callback's job names it (`callbackId`, with its
 * request id for the logs); callbacks stored together are applied by one job per kind
 * (`callbackIds`, comma-separated), whose callbacks the callback-reconciler applies together
 * (shared reads and writes, shared/operations/oneStatement.ts). The kind lets it take the
 * one-statement path. With traces on, a lone callback's job continues its request's trace; a
 * shared job lists each callback's own (`traceparents`, comma-separated, in the order of
 * `callbackIds`), and the reconciler applies each in its own.
 */
function jobsFor(arrivals: Arrival[]): OutboxMessage[] {
  if (arrivals.length === 1) {
    const [{ row, requestId, traceparent }] = arrivals;
    return [outboxMessage(QUEUES.callbackReconciler, APPLY_CALLBACK_JOB, { callbackId: row.id, kind: row.object_kind, requestId }, 0, traceparent)];
  }
  const byKind = new Map<string, Arrival[]>();
  for (const a of arrivals) {
    const same = byKind.get(a.row.object_kind);
    if (same) same.push(a);
    else byKind.set(a.row.object_kind, [a]);
  }
  return [...byKind].flatMap(([kind, all]) => {
    const jobs: OutboxMessage[] = [];
    for (let i = 0; i < all.length; i += CALLBACKS_PER_JOB) {
      const some = all.slice(i, i + CALLBACKS_PER_JOB);
      const traced = some.some((a) => a.traceparent) ? { traceparents: some.map((a) => a.traceparent ?? '').join(',') } : {};
      jobs.push(outboxMessage(QUEUES.callbackReconciler, APPLY_CALLBACK_JOB, { callbackIds: some.map((a) => a.row.id).join(','), kind, ...traced }, 0, null));
    }
    return jobs;
  });
}

/**
 * Stores a verified callback with the job that applies it: one statement (shared/db/sql/callbacks.ts)
 * writes the inbox row and its outbox row; the job is enqueued after commit. The callbacks of
 * concurrent requests share that statement, its commit and their jobs (one per kind).
 */
export async function storeCallback(
  deps: TransactDeps & { batches: Batches },
  provider: ProviderBase,
  raw: Buffer,
  parsed: ProviderCallback,
  requestId?: string,
): Promise<string> {
  const { db, outbox } = deps;
  const id = randomUUID();
  const store = deps.batches.get('store-callbacks', async (arrivals: Arrival[]) => {
    const jobs = jobsFor(arrivals);
    await insertCallbacksWithJobs(db, arrivals.map((a) => a.row), jobs);
    await outbox.publish(jobs, arrivals[0].log);
    return arrivals.map(() => undefined);
  });
  await store.call({
    row: {
      id,
      provider: provider.id,
      raw_body: raw.toString('utf8'),
      verified: true,
      provider_event_id: parsed.eventId,
      object_kind: parsed.kind,
      object_id: parsed.objectId,
      reported_status: parsed.status,
      provider_ref: parsed.providerRef,
    },
    requestId,
    log: deps.log,
    traceparent: traceparentNow(),
  });
  return id;
}

/**
 * The re-drive's source of callbacks (shared/queues/redrive.ts): stored but still not applied
 * (their job was lost with Redis, or failed every attempt), each with the job that applies it.
 * Safe beside a live job: applyStoredCallback locks the inbox row and applies it once.
 */
export const unappliedCallbacks: WorkSource = {
  name: 'callbacks',
  async find(db, { olderThan }, limit) {
    const rows: { id: string }[] = await InboxCallback.query(db).whereNull('processed_at').where('received_at', '<', olderThan).orderBy('received_at').limit(limit).select('id');
    return rows.map((r) => ({ queue: QUEUES.callbackReconciler, job: APPLY_CALLBACK_JOB, data: { callbackId: r.id } }));
  },
};
