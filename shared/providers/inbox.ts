import { raw } from 'objection';
import { InboxCallback } from '../db/models';
import { randomUUID } from 'node:crypto';
import type { TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
import { outboxMessage, publishOutbox } from '../queues/outbox';
import { insertCallbackWithJob } from '../db/sql/callbacks';
import type { Provider, ProviderCallback } from './types';

/**
 * Inbox of provider callbacks (architecture rule 2). The web process stores a verified callback
 * raw, with the job that applies it, and answers at once; the callback-reconciler applies each
 * stored callback exactly once, through the operations kernel (shared/operations/callbacks.ts), and records the outcome.
 */


/**
 * Stores a verified callback with the job that applies it: one statement (shared/db/sql/callbacks.ts)
 * writes the inbox row and its outbox row; the job is enqueued after commit.
 */
export async function storeCallback(deps: TransactDeps, provider: Provider, raw: Buffer, parsed: ProviderCallback, requestId?: string): Promise<string> {
  const { db } = deps;
  const id = randomUUID();
  const job = outboxMessage(QUEUES.callbackReconciler, 'apply-callback', { callbackId: id, requestId });
  await insertCallbackWithJob(
    db,
    {
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
  );
  await publishOutbox(db, deps.queues, [job], deps.log);
  return id;
}

/**
 * Callbacks stored but still not applied after `olderThanMs` (their job was lost with Redis, or
 * failed every attempt): applied here, oldest first. Safe beside the queue: applyStoredCallback
 * locks the inbox row and applies it once.
 */
export async function staleCallbacks(db: TransactDeps['db'], olderThanMs: number, batch = 100): Promise<string[]> {
  const rows: { id: string }[] = await InboxCallback.query(db)
    .whereNull('processed_at')
    .where('received_at', '<', raw(`now() - make_interval(secs => ?)`, [olderThanMs / 1000]))
    .orderBy('received_at')
    .limit(batch)
    .select('id');
  return rows.map((r) => r.id);
}
