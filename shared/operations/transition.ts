import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context';
import type { Executor, Trx } from '../db/knex';
import { writeOperations } from './writer';
import type { OperationWrite } from './operationWrite';
import type { CreditPosting } from '../ledger/credit';
import type { OutboxWriter } from '../db/transact';
import { allowsNegative, assertBalanced, normalise, type Posting } from '../rules/ledger';
import { DELIVER_JOB, deliverJob, deliveryRows, enabledEndpoints, subscribedEndpoints } from '../webhooks/fanout';
import { eventRecord, newEventRow } from '../events/record';
import { accountKey, onlyCredits, post, postingAccountIds } from '../ledger/postings';
import { QUEUES } from '../queues/names';
import { outboxMessage } from '../queues/outbox';
import type { Decision, Trigger } from './stateMachine';
import { decideTransition } from './decision';
import type { OperationKind, TriggerDetails } from './kind';
import type { OperationRow } from '../db/rows';
import type { Logger } from '../logger';

/**
 * Every change of an operation, its creation included: `decideTransition` (decision.ts, pure)
 * says what a trigger does, `operationWrite` (pure) turns that into the writer's terms (the row's change, its
 * history row, its event with its webhook deliveries and their outbox rows, its ledger credit),
 * and the writer (writer.ts) carries it out as a compare-and-set on the status
 * and version the row was read with, in one statement. Two callers, one writer:
 *
 * - under the row's lock (`applyTrigger`), inside a flow's transaction: what changes beyond the
 *   row (`afterMove`) and a posting that takes from a merchant's balance (which locks its
 *   accounts) follow in that transaction, the posting last, so the accounts are held only until
 *   the commit;
 * - without a lock (`writeAlone`), for what needs nothing else (a callback's simple move, a
 *   push's acceptance, a payment's creation): concurrent writes share one statement and one
 *   commit (the context's batches); one refused because its row changed is decided again.
 */

/** What applying a trigger did (also a stored callback's outcome). */
export type TriggerOutcome = 'applied' | 'duplicate' | 'ignored-late';

export class IllegalTransition extends Error {}

/**
 * Reads a row under SELECT ... FOR UPDATE: every change of an operation made beside others in a
 * flow's transaction happens behind this lock.
 */
export async function lockRow<R extends OperationRow>(
  trx: Trx,
  kind: OperationKind<R, any, any>,
  id: string,
): Promise<R | undefined> {
  return trx<R>(kind.model.tableName)
    .where({ ...kind.scope, id } as any)
    .forUpdate()
    .first() as Promise<R | undefined>;
}

type Taken = Extract<Decision<string>, { kind: 'move' | 'stay' }>;

/** What a taken trigger writes on its row (pure); a stay bumps the version only when the object changes. */
export function changeOf<R extends OperationRow>(
  kind: OperationKind<R, any>,
  row: R,
  d: Taken,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Record<string, unknown> {
  const change: Record<string, unknown> = { ...patch, updated_at: new Date(details.at) };
  // the provider's first reference, or the one its outcome names (Airtel answers a push with ours, its own comes with the outcome)
  const firstRef =
    details.providerRef && details.providerRef !== row.provider_ref && (!row.provider_ref || d.kind === 'move')
      ? details.providerRef
      : null;
  if (firstRef) change.provider_ref = firstRef;
  if (trigger === 'sent') change.sent_at = new Date(details.at);
  if (d.kind === 'stay') {
    const changesObject = Object.keys(patch).length > 0 || (firstRef !== null && kind.providerRefVisible);
    change.version = changesObject ? row.version + 1 : row.version;
    return change;
  }
  change.status = d.to;
  change.version = row.version + 1;
  if (d.completes) change.completed = Math.floor(details.at / 1000);
  if (d.to === 'failed') {
    change.failure_code = details.failureCode ?? 'provider-failed';
    change.failure_message = details.failureMessage ?? `The provider reported a failure`;
  } else if (row.failure_code) {
    // a late success corrects a failure: the failure it reported no longer stands
    change.failure_code = null;
    change.failure_message = null;
  }
  return change;
}

/** A posting, normalised and checked balanced, when it only credits (the writer writes it with the change); otherwise undefined. */
export function creditOnly(p: Posting): Posting | undefined {
  const n = normalise(p);
  assertBalanced(n);
  return onlyCredits(n) ? n : undefined;
}

/** A credit (creditOnly's) with its accounts' ids by accountKey; undefined when one of them does not exist yet. */
export function creditPosting(n: Posting, ids: Map<string, number>): CreditPosting | undefined {
  if (n.entries.some((e) => !ids.has(accountKey(e.account)))) return undefined;
  return {
    id: randomUUID(),
    kind: n.kind,
    referenceId: n.referenceId,
    merchantId: n.merchantId,
    currency: n.currency,
    entries: n.entries.map((e) => ({
      account_id: ids.get(accountKey(e.account))!,
      amount: e.amount,
      unfolded: !allowsNegative(e.account),
    })),
  };
}

/**
 * A taken trigger in the writer's terms (pure); `change` is its changeOf, `inputs` what the writer
 * needs beside: the merchant's enabled endpoints, the credit with its accounts, the callback.
 */
export function operationWrite<R extends OperationRow>(
  kind: OperationKind<R, any, any>,
  row: R,
  d: Taken,
  trigger: Trigger,
  details: TriggerDetails,
  change: Record<string, unknown>,
  inputs: { endpoints: { id: string; events: string[] }[]; posting: CreditPosting | null; callbackId?: string | null },
): OperationWrite {
  const updated = { ...row, ...change } as R;
  const event =
    d.kind === 'move' && d.event
      ? newEventRow({
          merchantId: row.merchant_id,
          environment: row.environment,
          type: d.event,
          objectId: row.id,
          objectVersion: updated.version,
          object: kind.eventObject(updated),
          at: details.at,
        })
      : null;
  const deliveries = event ? deliveryRows(event, subscribedEndpoints(inputs.endpoints, event.type), event.created) : [];
  return {
    id: row.id,
    from: { status: row.status, version: row.version },
    // the provider's acceptance is recorded once
    unsent: trigger === 'sent',
    patch: change,
    history: d.kind === 'move' ? { to: d.to, reason: d.correction ?? details.reason } : null,
    callbackId: inputs.callbackId ?? null,
    environment: row.environment,
    event: event && eventRecord(event),
    deliveries,
    outbox: deliveries.map((del) => outboxMessage(QUEUES.webhookSender, DELIVER_JOB, deliverJob(del))),
    posting: inputs.posting,
  };
}

/** A write of the row alone: no event, delivery, job or posting. */
function rowWrite(
  row: OperationRow,
  from: OperationWrite['from'],
  patch: Record<string, unknown>,
  history: OperationWrite['history'],
): OperationWrite {
  return {
    id: row.id,
    from,
    patch,
    history,
    environment: row.environment,
    event: null,
    deliveries: [],
    outbox: [],
    posting: null,
  };
}

/** A new row of `kind` in the writer's terms: its history row `created`, and the jobs that follow it. */
export function creationWrite<R extends OperationRow>(
  row: R,
  outbox: OperationWrite['outbox'],
  key: OperationWrite['key'] = null,
): OperationWrite {
  return {
    ...rowWrite(row, null, row as unknown as Record<string, unknown>, { to: row.status, reason: 'created' }),
    outbox,
    key,
  };
}

/**
 * Columns written beside the machine (an ask's stamp, a posted card token, a correctable
 * refusal's columns, a 3-D Secure return's window): no move, history or event, the version kept;
 * each a compare-and-set on the row as it was read. Returns whether each was written.
 */
export async function writeColumns<R extends OperationRow>(
  db: Executor,
  kind: OperationKind<R, any, any>,
  changes: { row: R; patch: Partial<R> }[],
): Promise<boolean[]> {
  if (changes.length === 0) return [];
  return writeOperations(
    db,
    kind.sql,
    changes.map(({ row, patch }) =>
      rowWrite(row, { status: row.status, version: row.version }, patch as Record<string, unknown>, null),
    ),
  );
}

/** Creates a row of `kind` in the caller's transaction, with the jobs that follow it (enqueued once it commits). */
export async function createRow<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any, any>,
  row: R,
  jobs: OperationWrite['outbox'],
): Promise<void> {
  await writeOperations(trx, kind.sql, [creationWrite(row, jobs)]);
  outbox.written(jobs);
}

/**
 * Writes without a lock, in the batch of whatever runs beside it (one statement, one commit).
 * If Postgres refuses the batch (one payment's reference already used, one key twice), nothing
 * was written and each write runs alone, so each gets its own answer. Resolves whether the write
 * was written (false: its compare-and-set found the row changed, or its key was held).
 */
export async function writeAlone(
  ctx: Pick<ServiceContext, 'db' | 'batches'> & { log?: Logger },
  kind: OperationKind<any, any, any>,
  write: OperationWrite,
): Promise<boolean> {
  const batch = ctx.batches.get(
    `write-${kind.name}`,
    async (ws: OperationWrite[]): Promise<PromiseSettledResult<boolean>[]> => {
      if (ws.length > 1) {
        try {
          return (await writeOperations(ctx.db, kind.sql, ws)).map((value) => ({ status: 'fulfilled', value }));
        } catch (err) {
          ctx.log?.warn(
            {
              kind: kind.name,
              count: ws.length,
              code: (err as { code?: string }).code,
              err: { message: (err as Error).message },
            },
            'writes batched together refused; each is written alone',
          );
        }
      }
      return Promise.all(
        ws.map((w) =>
          writeOperations(ctx.db, kind.sql, [w]).then(
            ([value]): PromiseSettledResult<boolean> => ({ status: 'fulfilled', value }),
            (reason): PromiseSettledResult<boolean> => ({ status: 'rejected', reason }),
          ),
        ),
      );
    },
  );
  const result = await batch.call(write);
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/**
 * Applies `trigger` to a row locked by the caller, in its transaction. `patch` carries what the
 * trigger changes besides the status (a payment's amount_refunded); it is written whenever the
 * trigger is taken.
 */
export async function applyTrigger<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any, any>,
  row: R,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Promise<{ outcome: TriggerOutcome; row: R }> {
  return applyDecision(trx, outbox, kind, row, decideTransition(kind, row, trigger), trigger, details, patch);
}

/**
 * Carries out what decideTransition (decision.ts) decided for a row locked by the caller, in its
 * transaction: an illegal move throws, a repeat or a late trigger changes nothing, a taken one is
 * written by the writer, then what it changes beyond its row and a posting that takes from a balance.
 */
export async function applyDecision<R extends OperationRow>(
  trx: Trx,
  outbox: OutboxWriter,
  kind: OperationKind<R, any, any>,
  row: R,
  d: Decision<string>,
  trigger: Trigger,
  details: TriggerDetails,
  patch: Partial<R> = {},
): Promise<{ outcome: TriggerOutcome; row: R }> {
  if (d.kind === 'illegal')
    throw new IllegalTransition(`${trigger} is not allowed on a ${row.status} ${kind.name} (${row.id})`);
  if (d.kind === 'duplicate') return { outcome: 'duplicate', row };
  if (d.kind === 'late') return { outcome: 'ignored-late', row };

  const change = changeOf(kind, row, d, trigger, details, patch);
  const updated = { ...row, ...change } as R;
  const effect = d.kind === 'move' ? d.effect : null;
  const pure = effect && kind.posting ? kind.posting(updated, effect) : undefined;
  const credit = pure && creditOnly(pure);
  const posting = credit ? creditPosting(credit, await postingAccountIds(trx, credit)) : undefined;
  const eventType = d.kind === 'move' ? d.event : null;
  const endpoints = eventType ? await enabledEndpoints(trx, row.merchant_id, row.environment) : [];
  const write = operationWrite(kind, row, d, trigger, details, change, { endpoints, posting: posting ?? null });
  const [written] = await writeOperations(trx, kind.sql, [write]);
  if (!written) throw new Error(`${kind.name} ${row.id} changed under its lock`);
  outbox.written(write.outbox);
  if (d.kind === 'move' && kind.afterMove) await kind.afterMove(trx, outbox, updated, d.to, details.at);
  // a posting that takes from a merchant's balance locks its accounts: last, held until the commit
  if (effect && !posting) await (pure ? post(trx, pure) : kind.post!(trx, updated, effect));
  return { outcome: 'applied', row: updated };
}
