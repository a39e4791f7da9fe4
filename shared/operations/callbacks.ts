import type { ServiceContext } from '../context';
import type { Trx } from '../db/knex';
import { transact, type OutboxWriter } from '../db/transact';
import type { Logger } from '../logger';
import { parseCallbackBody } from '../providers/protocol';
import type { ProviderBase, ProviderCallback, ProviderObjectKind, StoredCallback } from '../providers/types';
import type { OperationKind } from './kind';
import { applyTrigger, lockRow, type TriggerOutcome } from './transition';
import { applyCallbackInOneStatement } from './oneStatement';
import type { OperationRow } from '../db/rows';

/** What applying a callback did; every stored callback ends with one (kept on its inbox row). */
export type CallbackOutcome =
  | TriggerOutcome
  /** no operation of ours has this id */
  | 'unknown-object'
  /** the operation is not handled by the provider that called (another provider or environment) */
  | 'provider-mismatch'
  /** a report about an operation never sent to that provider: recorded, listed for review, not applied */
  | 'never-sent';

/**
 * Applies a verified provider callback to its operation, under the row lock, in the caller's
 * transaction (the inbox's). Only the provider that handles the operation may decide it: a
 * callback verified with another provider's secret (the sandbox's, for a live payment) changes
 * nothing.
 */
export async function applyCallback<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any, any>,
  cb: ProviderCallback,
  provider: ProviderBase,
  at: number,
): Promise<CallbackOutcome> {
  const row = await lockRow(trx, kind, cb.objectId);
  if (!row) return 'unknown-object';
  if (row.provider !== provider.id || row.environment !== provider.environment) return 'provider-mismatch';
  if (kind.neverSent?.(row)) return 'never-sent';
  const { outcome } = await applyTrigger(trx, outbox, kind, row, kind.reported(cb.status), {
    reason: 'provider-callback',
    providerRef: cb.providerRef,
    failureCode: cb.failureCode,
    failureMessage: cb.failureMessage,
    at,
  });
  return outcome;
}


export interface ProcessedCallback {
  outcome: CallbackOutcome | 'already-processed';
  callback?: StoredCallback;
}

/**
 * Applies a stored callback (the inbox, architecture rule 2) once: the inbox row is locked, and
 * marked processed with its outcome in the same transaction as the change it causes, so a job
 * run twice applies it once.
 */
export async function applyStoredCallback(
  ctx: ServiceContext,
  kinds: Record<ProviderObjectKind, OperationKind<any, any, any>>,
  callbackId: string,
  log: Logger = ctx.log,
  kindHint?: ProviderObjectKind,
): Promise<ProcessedCallback> {
  // the job names its operation's kind: a move of a simple kind is written in one statement
  const hinted = kindHint && kinds[kindHint];
  if (hinted) {
    const done = await applyCallbackInOneStatement(ctx, hinted, callbackId, log);
    if (done) return done;
  }
  return transact({ db: ctx.db, outbox: ctx.outbox, clock: ctx.clock, log }, async (trx, outbox) => {
    // the general path of every callback: the knex builder, ~40 µs less CPU per query than the model
    const row = await trx('provider_callbacks').where({ id: callbackId }).forUpdate().first();
    if (!row) throw new Error(`callback ${callbackId} is not in the inbox`);
    if (row.processed_at) return { outcome: 'already-processed' as const };
    const provider = ctx.providers.byProviderId(row.provider);
    const kind = kinds[row.object_kind as ProviderObjectKind];
    // a missing kind or provider is a deployment fault: throwing keeps the callback for a retry
    if (!provider) throw new Error(`callback ${callbackId}: provider ${row.provider} is not configured`);
    if (!kind) throw new Error(`callback ${callbackId}: no operation kind ${row.object_kind}`);
    const callback: StoredCallback = { ...parseCallbackBody(Buffer.from(row.raw_body, 'utf8')), id: row.id, provider: row.provider };
    const outcome = await applyCallback(trx, outbox, kind, callback, provider, ctx.clock.now());
    await trx('provider_callbacks').where({ id: callbackId }).update({ processed_at: trx.fn.now(), outcome });
    return { outcome, callback };
  });
}
