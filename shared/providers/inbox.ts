import { randomUUID } from 'node:crypto';
import type { Trx } from '../db/knex';
import { transact, type OutboxWriter, type TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
import { outboxInsert, outboxMessage, publishOutbox } from '../queues/outbox';
import { parseCallbackBody } from './protocol';
import type { Provider, ProviderCallback, ProviderObjectKind } from './types';

/**
 * Inbox of provider callbacks (architecture rule 2). The web process stores a verified callback
 * raw, with the job that applies it, and answers at once; the callback-reconciler applies each
 * stored callback exactly once, through the handler of its object kind, and records the outcome.
 */

export const CALLBACKS = 'provider_callbacks';

/** What applying a callback did; every callback ends with one, kept on its inbox row. */
export type CallbackOutcome =
  | 'applied'
  /** the object already had this outcome (the same callback again) */
  | 'duplicate'
  /** the object already had another outcome: recorded, nothing changed */
  | 'ignored-late'
  /** no object of ours has this id */
  | 'unknown-object'
  /** the object is not handled by the provider that called (other provider or environment) */
  | 'provider-mismatch';

export interface StoredCallback extends ProviderCallback {
  /** inbox row id */
  id: string;
  provider: string;
}

/** Applies one callback to its object, in the reconciler's transaction. One per object kind. */
export type CallbackHandler = (trx: Trx, outbox: OutboxWriter, callback: StoredCallback, provider: Provider) => Promise<CallbackOutcome>;
export type CallbackHandlers = Partial<Record<ProviderObjectKind, CallbackHandler>>;

/**
 * Stores a verified callback with the job that applies it: one statement (one round trip, one
 * commit) writes the inbox row and its outbox row; the job is enqueued after commit.
 */
export async function storeCallback(deps: TransactDeps, provider: Provider, raw: Buffer, parsed: ProviderCallback, requestId?: string): Promise<string> {
  const { db } = deps;
  const id = randomUUID();
  const job = outboxMessage(QUEUES.callbackReconciler, 'apply-callback', { callbackId: id, requestId });
  const row = db(CALLBACKS)
    .insert({
      id,
      provider: provider.id,
      raw_body: raw.toString('utf8'),
      verified: true,
      provider_event_id: parsed.eventId,
      object_kind: parsed.kind,
      object_id: parsed.objectId,
      reported_status: parsed.status,
      provider_ref: parsed.providerRef,
    })
    .toSQL();
  const outbox = outboxInsert(db, job).toSQL();
  await db.raw(`with c as (${row.sql}) ${outbox.sql}`, [...row.bindings, ...outbox.bindings]);
  await publishOutbox(db, deps.queues, [job], deps.log);
  return id;
}

export interface ProcessedCallback {
  outcome: CallbackOutcome | 'already-processed';
  callback?: StoredCallback;
}

/**
 * Applies a stored callback once: the inbox row is locked, and marked processed in the same
 * transaction as the change it causes, so a job run twice applies it once.
 */
export async function processCallback(
  deps: TransactDeps,
  callbackId: string,
  handlers: CallbackHandlers,
  providerById: (id: string) => Provider | undefined,
): Promise<ProcessedCallback> {
  return transact(deps, async (trx, outbox) => {
    const row = await trx(CALLBACKS).where({ id: callbackId }).forUpdate().first();
    if (!row) throw new Error(`callback ${callbackId} is not in the inbox`);
    if (row.processed_at) return { outcome: 'already-processed' as const };
    const provider = providerById(row.provider);
    const handler = handlers[row.object_kind as ProviderObjectKind];
    // a missing handler or provider is a deployment fault: throwing keeps the callback for a retry
    if (!provider) throw new Error(`callback ${callbackId}: provider ${row.provider} is not configured`);
    if (!handler) throw new Error(`callback ${callbackId}: no handler for ${row.object_kind} callbacks`);
    const callback: StoredCallback = { ...parseCallbackBody(Buffer.from(row.raw_body, 'utf8')), id: row.id, provider: row.provider };
    const outcome = await handler(trx, outbox, callback, provider);
    await trx(CALLBACKS).where({ id: callbackId }).update({ processed_at: trx.fn.now(), outcome });
    return { outcome, callback };
  });
}

/**
 * Callbacks stored but still not applied after `olderThanMs` (their job was lost with Redis, or
 * failed every attempt): applied here, oldest first. Safe beside the queue: processCallback
 * locks the inbox row and applies it once.
 */
export async function staleCallbacks(db: TransactDeps['db'], olderThanMs: number, batch = 100): Promise<string[]> {
  const rows: { id: string }[] = await db(CALLBACKS)
    .whereNull('processed_at')
    .where('received_at', '<', db.raw(`now() - make_interval(secs => ?)`, [olderThanMs / 1000]))
    .orderBy('received_at')
    .limit(batch)
    .select('id');
  return rows.map((r) => r.id);
}
