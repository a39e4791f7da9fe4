import type { ServiceContext } from '../context';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import type { ProviderObjectKind } from '../providers/types';
import type { OperationRef, ProviderEndpoint, StoredCallback } from '../providers/connector';
import { amountDiffers, storedCallback } from '../providers/stored';
import type { CallbackColumns, OperationRow } from '../db/rows';
import type { Operator } from '../vocabulary';
import type { OperationKind } from './kind';
import { applyDecision, lockRow, type TriggerOutcome } from './transition';
import { decideTransition, type Refusal } from './decision';
import { applyCallbackInOneStatement } from './oneStatement';

/** What applying a callback did; every stored callback ends with one (kept on its inbox row). */
export type CallbackOutcome =
  | TriggerOutcome
  /** a report the operation's state refuses (decision.ts): recorded, listed for review, not applied */
  | Refusal
  /** no operation of ours has this id */
  | 'unknown-object';

/**
 * Applies a stored callback (the inbox: docs/decisions.md#provider-operations) once: the inbox row is locked, and
 * marked processed with its outcome in the same transaction as the change it causes, so a job
 * run twice applies it once.
 */
export async function applyStoredCallback(
  ctx: ServiceContext,
  kinds: Record<ProviderObjectKind, OperationKind<any, any, any>>,
  callbackId: string,
  log: Logger = ctx.log,
  kindHint?: ProviderObjectKind,
): Promise<{ outcome: CallbackOutcome | 'already-processed'; callback?: StoredCallback }> {
  // the job names its operation's kind: a move of a simple kind is written in one statement
  const hinted = kindHint && kinds[kindHint];
  if (hinted) {
    const done = await applyCallbackInOneStatement(ctx, hinted, callbackId, log);
    if (done) return done;
  }
  // an unsigned callback is never applied on its word: its provider's status query decides (asked before any lock is taken)
  const confirmation = await confirmUnsigned(ctx, kinds, callbackId);
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
    const stored = storedCallback(row as CallbackColumns);
    const callback: StoredCallback | undefined = stored.verified
      ? stored
      : confirmation && { ...stored, ...confirmation };
    const at = ctx.clock.now();
    const op = await lockRow(trx, kind, stored.objectId);
    let outcome: CallbackOutcome;
    if (!op) outcome = 'unknown-object';
    else {
      const reported = callback ?? stored;
      const trigger = kind.reported(reported.status);
      // an unsigned notification is applied as its provider's status query says, and never when it names another amount itself
      const named = !stored.verified && amountDiffers(stored, kind.moved(op)) ? stored : reported;
      const report = {
        provider,
        confirmed: callback !== undefined,
        amount: named.amount,
        currency: named.currency,
      };
      const verdict = decideTransition(kind, op, trigger, report);
      const details = {
        reason: 'provider-callback',
        providerRef: reported.providerRef,
        failureCode: reported.failureCode,
        failureMessage: reported.failureMessage,
        at,
      };
      outcome =
        verdict.kind === 'refused'
          ? verdict.outcome
          : (await applyDecision(trx, outbox, kind, op, verdict, trigger, details)).outcome;
    }
    if (outcome === 'amount-mismatch')
      log.error(
        { callbackId, kind: kind.name, id: stored.objectId, provider: provider.id },
        'a callback names another amount than the operation: not applied (GET /admin/attention)',
      );
    await trx('provider_callbacks').where({ id: callbackId }).update({ processed_at: trx.fn.now(), outcome });
    return { outcome, callback: callback ?? stored };
  });
}

/** What a status query says of an unsigned callback's operation, as a callback's fields; undefined when it is signed or has no final outcome. */
async function confirmUnsigned(
  ctx: ServiceContext,
  kinds: Record<ProviderObjectKind, OperationKind<any, any, any>>,
  callbackId: string,
): Promise<
  Pick<StoredCallback, 'status' | 'providerRef' | 'failureCode' | 'failureMessage' | 'amount' | 'currency'> | undefined
> {
  const row = (await ctx.db('provider_callbacks').where({ id: callbackId }).first()) as
    (CallbackColumns & { processed_at: Date | null }) | undefined;
  if (!row || row.verified || row.processed_at) return undefined;
  const kind = kinds[row.object_kind as ProviderObjectKind];
  const provider = ctx.providers.byProviderId(row.provider);
  const op: OperationRow | undefined = kind && (await kind.model.query(ctx.db).findById(row.object_id));
  if (!kind || !provider || !op || op.provider !== provider.id) return undefined;
  const answer = await askProvider(ctx, provider, kind, op);
  if (answer.state !== 'succeeded' && answer.state !== 'failed' && answer.state !== 'cancelled') return undefined;
  return {
    status: answer.state,
    providerRef: answer.providerRef,
    failureCode: answer.state === 'succeeded' ? null : answer.failureCode,
    failureMessage: answer.state === 'succeeded' ? null : answer.failureMessage,
    amount: answer.amount ?? null,
    currency: answer.currency ?? null,
  };
}

/** Asks an operation's provider what it knows, counted for availability like every provider call. */
export async function askProvider(
  ctx: ServiceContext,
  provider: ProviderEndpoint,
  kind: OperationKind<any, any, any>,
  op: OperationRow,
) {
  const ref: OperationRef = {
    kind: kind.name,
    id: op.id,
    providerRef: op.provider_ref,
    operator: (op.operator as Operator | null) ?? null,
    currency: op.currency,
    created: op.created * 1000,
    paymentId: (op as OperationRow & { payment_id?: string }).payment_id ?? null,
    ...(kind.askContext ? await kind.askContext(op, ctx.db, ctx.clock.now()) : {}),
  };
  return ctx.providerHealth.observe(provider, kind.name, ref.operator, () => provider.ask(ref));
}
