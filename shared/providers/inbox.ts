import { randomUUID } from 'node:crypto';
import { InboxCallback } from '../db/models';
import type { TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
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

/**
 * Stores a verified callback with the job that applies it: one statement (shared/db/sql/callbacks.ts)
 * writes the inbox row and its outbox row; the job is enqueued after commit. `together`
 * (KERNEL_COALESCE): concurrent callbacks share that statement.
 */
export async function storeCallback(
  deps: TransactDeps & { together: boolean },
  provider: ProviderBase,
  raw: Buffer,
  parsed: ProviderCallback,
  requestId?: string,
): Promise<string> {
  const { db } = deps;
  const id = randomUUID();
  // the kind lets the callback-reconciler take the one-statement path (shared/operations/oneStatement.ts)
  const job = outboxMessage(QUEUES.callbackReconciler, APPLY_CALLBACK_JOB, { callbackId: id, kind: parsed.kind, requestId });
  // the callbacks of concurrent requests are stored in one statement, one commit (KERNEL_COALESCE)
  const store = poolCoalescer<{ row: InboxRow; job: OutboxMessage }, void>(
    db,
    'store-callbacks',
    async (items) => {
      await insertCallbacksWithJobs(db, items);
      return items.map(() => undefined);
    },
    deps.together,
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
    job,
  });
  await publishOutbox(db, deps.queues, [job], deps.log);
  return id;
}

/**
 * The re-drive's source of callbacks (shared/queues/redrive.ts): stored but still not applied
 * (their job was lost with Redis, or failed every attempt), each with the job that applies it.
 * Safe beside a live job: applyStoredCallback locks the inbox row and applies it once.
 */
export const unappliedCallbacks: WorkSource = {
  name: 'callbacks',
  async find(ctx, olderThan, limit) {
    const rows: { id: string }[] = await InboxCallback.query(ctx.db).whereNull('processed_at').where('received_at', '<', olderThan).orderBy('received_at').limit(limit).select('id');
    return rows.map((r) => ({ queue: QUEUES.callbackReconciler, job: APPLY_CALLBACK_JOB, data: { callbackId: r.id } }));
  },
};
