import { runSql } from '../db/sql/run';
import type { ServiceContext } from '../context';
import { findOperations } from '../db/sql/operationReads';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import { ProviderError } from '../providers/errors';
import type { ProviderAccepted } from '../providers/types';
import type { WorkSource } from '../queues/redrive';
import type { AcceptedStep, OperationKind, TriggerDetails } from './kind';
import { isOpen } from './stateMachine';
import { decideTransition } from './decision';
import {
  applyTrigger,
  changeOf,
  lockRow,
  operationWrite,
  writeAlone,
  writeColumns,
  type TriggerOutcome,
} from './transition';
import type { OperationRow } from '../db/rows';
import type { Operator } from '../vocabulary';

/** `kept-open`: refused for a reason the client can correct (kind.correctable); still open and unsent. */
export type SendResult = 'sent' | 'already-sent' | 'not-open' | 'refused' | 'kept-open' | 'unknown';

/**
 * Sends an operation to its provider, once. Our id is the provider's idempotency key: a job run
 * again after a crash between the provider's answer and our write (or after a timeout) asks
 * again with the same key and gets the same answer, so the client is prompted, credited or paid
 * once. A retryable provider error is thrown for BullMQ to retry with backoff; a permanent
 * refusal fails the operation with the provider's code (and gives money out back).
 */
export async function sendOnce<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  id: string,
  log: Logger,
): Promise<SendResult> {
  // the reads of concurrent jobs are one statement
  const reads = ctx.batches.get(`find-${kind.name}`, (ids: string[]) => findOperations<R>(ctx.db, kind.sql, ids));
  const row = await reads.call(id);
  if (!row) {
    log.warn({ kind: kind.name, id }, 'send job for an unknown operation');
    return 'unknown';
  }
  if (!isOpen(kind.machine, row.status) || !kind.sendable(row, ctx.clock.now())) return 'not-open';
  if (row.sent_at) return 'already-sent';

  const provider = row.provider ? ctx.providers.byProviderId(row.provider) : undefined;
  if (!provider) {
    await refuse(
      ctx,
      kind,
      id,
      {
        reason: 'provider-refused',
        failureCode: 'operator-unavailable',
        failureMessage: `No provider ${row.provider ?? ''} is configured`,
        at: ctx.clock.now(),
      },
      log,
    );
    return 'refused';
  }
  let answer: ProviderAccepted;
  try {
    answer = await ctx.providerHealth.observe(provider, kind.name, (row.operator as Operator | null) ?? null, () =>
      kind.request(provider, row, ctx.db),
    );
  } catch (err) {
    if (err instanceof ProviderError && !err.retryable) {
      const keep = kind.correctable?.(row, err);
      if (keep) {
        await keepOpen(ctx, kind, id, keep, log);
        log.warn(
          { kind: kind.name, id, code: err.code },
          'refused by the provider for a reason the client can correct; still open',
        );
        return 'kept-open';
      }
      await refuse(
        ctx,
        kind,
        id,
        { reason: 'provider-refused', failureCode: err.code, failureMessage: err.message, at: ctx.clock.now() },
        log,
      );
      return 'refused';
    }
    throw err;
  }
  const providerRef = answer.providerRef;
  const at = ctx.clock.now();
  const step: AcceptedStep<R> = kind.accepted?.(row, answer, { config: ctx.config, now: at }) ?? { trigger: 'sent' };
  // a plain acceptance may take the one-statement path; one the kind reads more into (3-D Secure, a decline) is decided under the lock
  const plain = step.trigger === 'sent' && !step.patch && !step.details;
  const outcome =
    (plain ? await recordSentAlone(ctx, kind, row, providerRef, at) : undefined) ??
    (await recordAcceptance(
      ctx,
      kind,
      id,
      step,
      { reason: 'provider-accepted', providerRef, ...step.details, at },
      log,
    ));
  log.info(
    { kind: kind.name, id, provider: provider.id, outcome },
    outcome === 'applied' ? 'sent to the provider' : 'already recorded as sent',
  );
  return outcome === 'applied' ? 'sent' : 'already-sent';
}

/**
 * The acceptance of an operation `sent` does not move (a payment's push), without a lock: the
 * writer's compare-and-set on the row as read, still unsent, in the batch of concurrent pushes.
 * Undefined when it does not apply or the row changed meanwhile: the locked path decides.
 */
export async function recordSentAlone<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  row: R,
  providerRef: string,
  at: number,
): Promise<TriggerOutcome | undefined> {
  const d = decideTransition(kind, row, 'sent');
  if (d.kind !== 'stay') return undefined;
  const details = { reason: 'provider-accepted', providerRef, at };
  const write = operationWrite(kind, row, d, 'sent', details, changeOf(kind, row, d, 'sent', details), {
    endpoints: [],
    posting: null,
  });
  return (await writeAlone(ctx, kind, write)) ? 'applied' : undefined;
}

/** Records the provider's acceptance under the row lock (applyTrigger); a second run finds sent_at and changes nothing. */
export async function recordAcceptance<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  id: string,
  step: AcceptedStep<R>,
  details: TriggerDetails,
  log: Logger,
): Promise<TriggerOutcome> {
  return transact({ db: ctx.db, outbox: ctx.outbox, clock: ctx.clock, log }, async (trx, outbox) => {
    const locked = await lockRow(trx, kind, id);
    if (!locked || locked.sent_at) return 'duplicate';
    // `sent` records sent_at itself; another trigger of the acceptance (3-D Secure, a decline) records it with its patch
    const patch =
      step.trigger === 'sent' ? (step.patch ?? {}) : ({ ...step.patch, sent_at: new Date(details.at) } as Partial<R>);
    return (await applyTrigger(trx, outbox, kind, locked, step.trigger, details, patch)).outcome;
  });
}

/** A refusal the client can correct: the row keeps its status and stays unsent; only the kind's columns change. */
async function keepOpen<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  id: string,
  patch: Partial<R>,
  log: Logger,
): Promise<void> {
  await transact({ db: ctx.db, outbox: ctx.outbox, clock: ctx.clock, log }, async (trx) => {
    const locked = await lockRow(trx, kind, id);
    if (!locked || locked.sent_at || !isOpen(kind.machine, locked.status)) return;
    await writeColumns(trx, kind, [{ row: locked, patch: { ...patch, updated_at: new Date(ctx.clock.now()) } }]);
  });
}

async function refuse<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  id: string,
  details: TriggerDetails,
  log: Logger,
): Promise<void> {
  const outcome = await transact({ db: ctx.db, outbox: ctx.outbox, clock: ctx.clock, log }, async (trx, outbox) => {
    const locked = await lockRow(trx, kind, id);
    return locked ? (await applyTrigger(trx, outbox, kind, locked, 'fail', details)).outcome : 'duplicate';
  });
  log.warn({ kind: kind.name, id, failureCode: details.failureCode, outcome }, 'refused by the provider');
}

/**
 * The re-drive's source of a kind (shared/queues/redrive.ts): its open operations never handed
 * to the provider, each with its send job. A payment past its window is left to the sweep (it
 * is no longer pushed); money out is sent whenever it is still unsent.
 */
export function unsentOperations(kind: OperationKind<any, any, any>): WorkSource {
  return {
    name: `${kind.name}-send`,
    async find(db, { now, olderThan }, limit) {
      const windowEndsAfter = kind.unsentAtWindowEnd === 'ask' ? new Date(now) : '-infinity';
      const rows = await runSql<OperationRow>(db, kind.sql.unsent, [
        kind.machine.open,
        olderThan,
        windowEndsAfter,
        limit,
      ]);
      return rows
        .filter((r) => kind.sendable(r, now))
        .map((r) => ({ queue: kind.send.queue, job: kind.send.job, data: { [kind.send.idField]: r.id } }));
    },
  };
}
