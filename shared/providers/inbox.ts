import { randomUUID } from 'node:crypto';
import { InboxCallback } from '../db/models';
import type { TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
import type { Logger } from '../logger';
import { outboxMessage, publishOutbox, type OutboxMessage } from '../queues/outbox';
import type { WorkSource } from '../queues/redrive';
import { poolCoalescer } from '../db/coalescer';
import { insertCallbacksWithJobs, type InboxRow } from '../db/sql/callbacks';
import type { ProviderBase, ProviderCallback } from './types';

/**
 * Inbox of provider callbacks (architecture rule 2). The web process stores a verified callback
 * raw, with the job that applies it, and answers at once; the callback-reconciler applies each
 * stored callback exactly once, through the operations kernel (shared/operations/callbacks.ts), and records the outcome.
 */

export const CALLBACKS = 'provider_callbacks';
const APPLY_CALLBACK_JOB = 'apply-callback';

/** The most callbacks one callback-reconciler job names. */
export const CALLBACKS_PER_JOB = 100;

interface Arrival {
  row: InboxRow;
  requestId?: string;
  log?: Logger;
}

/**
 * The jobs that apply stored callbacks: a lone callback's job names it (`callbackId`, with its
 * request id for the logs); callbacks stored together are applied by one job per kind
 * (`callbackIds`, comma-separated), whose callbacks the callback-reconciler applies together
 * (shared reads and writes, shared/operations/oneStatement.ts). The kind lets it take the
 * one-statement path.
 */
function jobsFor(arrivals: Arrival[]): OutboxMessage[] {
  if (arrivals.length === 1) {
    const [{ row, requestId }] = arrivals;
    return [outboxMessage(QUEUES.callbackReconciler, APPLY_CALLBACK_JOB, { callbackId: row.id, kind: row.object_kind, requestId })];
  }
  const byKind = new Map<string, string[]>();
  for (const { row } of arrivals) {
    const ids = byKind.get(row.object_kind);
    if (ids) ids.push(row.id);
    else byKind.set(row.object_kind, [row.id]);
  }
  return [...byKind].flatMap(([kind, ids]) => {
    const jobs: OutboxMessage[] = [];
    for (let i = 0; i < ids.length; i += CALLBACKS_PER_JOB) {
      jobs.push(outboxMessage(QUEUES.callbackReconciler, APPLY_CALLBACK_JOB, { callbackIds: ids.slice(i, i + CALLBACKS_PER_JOB).join(','), kind }));
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
  deps: TransactDeps,
  provider: ProviderBase,
  raw: Buffer,
  parsed: ProviderCallback,
  requestId?: string,
): Promise<string> {
  const { db, queues } = deps;
  const id = randomUUID();
  const store = poolCoalescer<Arrival, void>(
    db,
    'store-callbacks',
    async (arrivals) => {
      const jobs = jobsFor(arrivals);
      await insertCallbacksWithJobs(db, arrivals.map((a) => a.row), jobs);
      await publishOutbox(db, queues, jobs, arrivals[0].log);
      return arrivals.map(() => undefined);
    },
  );
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
