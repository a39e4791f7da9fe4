import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context';
import { poolCoalescer } from '../db/coalescer';
import { markCallbacks, readCallbacksWithRows, writeTransitions, type CallbackMark, type CallbackWithRow, type TransitionWrite } from '../db/sql/transitions';
import { allowsNegative, assertBalanced, normalise } from '../domain/ledger';
import { newEventRow, storedBody } from '../events/record';
import { accountKey, onlyCredits } from '../ledger/postings';
import type { Logger } from '../logger';
import { parseCallbackBody } from '../providers/protocol';
import type { StoredCallback } from '../providers/types';
import { QUEUES } from '../queues/names';
import { outboxMessage, publishOutbox } from '../queues/outbox';
import { DELIVER_JOB, deliverJob, deliveryRows, subscribedEndpoints } from '../events/fanout';
import type { OperationKind } from './kind';
import { decide } from './machine';
import { changeOf } from './transition';
import type { OperationRow } from '../db/rows';

/** What the one-statement path does with a callback: its move, or the outcome of one that changes nothing. */
type OneStatementOutcome = 'applied' | 'duplicate' | 'ignored-late' | 'already-processed';

/**
 * A callback's transition in two round trips and no explicit transaction: one read (the callback, its operation, the merchant's endpoints and ledger
 * accounts), `decide` and the kernel's pure pieces in the process (changeOf, newEventRow,
 * deliveryRows, the kind's posting), then one statement that writes the move, its history row,
 * its event with its deliveries and their outbox rows, its ledger posting and the callback's
 * outcome (shared/db/sql/transitions.ts). The general path (applyStoredCallback: BEGIN, the
 * inbox row and the operation locked FOR UPDATE, a dozen statements, COMMIT) takes thirteen.
 *
 * The write is a compare-and-set under the row lock the UPDATE takes: it happens only while the
 * operation still has the status and version it was read with and the callback is unprocessed,
 * so it is exactly the move `decide` chose for that state, and nothing else changed in between;
 * otherwise nothing is written, it is tried once more from a fresh read, and then the general
 * path decides under its locks. It is taken
 * only for what it covers: a move (not a stay), of a kind with nothing
 * to change beyond its row (no afterMove) and a credit-only posting (no balance to lock) on
 * accounts that exist, by the provider that handles the operation. Anything else returns
 * undefined and goes the general way. A repeat or a late report (the operation already has the
 * outcome, or another) writes only its callback's outcome, on the same compare-and-set terms.
 *
 * Concurrent callbacks of one kind share their statements (shared/db/coalescer.ts): the
 * reads of the jobs that arrive while a read runs are one read of all their callbacks, and their
 * writes one write of all their transitions, each still a compare-and-set on its own row (a
 * write refused for one row leaves the others). A lone callback runs at once, in a batch of one.
 */
export async function applyCallbackInOneStatement<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any>,
  callbackId: string,
  log: Logger,
): Promise<{ outcome: OneStatementOutcome; callback?: StoredCallback } | undefined> {
  if (kind.afterMove || !kind.posting) return undefined;
  // a write refused because the row changed since it was read (most often the push's acceptance,
  // recorded while the callback was on its way) is tried once more from a fresh read
  for (let attempt = 0; attempt < 2; attempt++) {
    const result = await attemptOnce(ctx, kind, callbackId, log);
    if (result !== 'changed') return result;
  }
  return undefined;
}

async function attemptOnce<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any>,
  callbackId: string,
  log: Logger,
): Promise<{ outcome: OneStatementOutcome; callback?: StoredCallback } | 'changed' | undefined> {
  if (!kind.posting) return undefined;
  // the reads and the writes of concurrent jobs are shared statements
  const reads = poolCoalescer<string, CallbackWithRow<R> | undefined>(ctx.db, `read-callbacks-${kind.name}`, async (ids) => {
    const found = await readCallbacksWithRows<R>(ctx.db, kind, ids);
    return ids.map((id) => found.get(id));
  });
  const writes = poolCoalescer<TransitionWrite, boolean>(ctx.db, `write-transitions-${kind.name}`, (ws) => writeTransitions(ctx.db, kind, ws));
  const read = await reads.call(callbackId);
  if (!read) return undefined;
  // a job run again (the relay's or the re-drive's copy): the outcome is committed, nothing to do
  if (read.callback.processed_at) return { outcome: 'already-processed' };
  const { row } = read;
  const provider = ctx.providers.byProviderId(read.callback.provider);
  if (!provider || row.provider !== provider.id || row.environment !== provider.environment || kind.neverSent?.(row)) return undefined;
  const callback: StoredCallback = { ...parseCallbackBody(Buffer.from(read.callback.raw_body, 'utf8')), id: callbackId, provider: read.callback.provider };
  const trigger = kind.reported(callback.status);
  const d = decide(kind.machine, row.status, trigger);
  if (d.kind === 'duplicate' || d.kind === 'late') {
    // a repeat (providers send again when we answer slowly) or a report on a closed operation
    // changes nothing but its own outcome: one shared statement, no transaction of its own
    const outcome = d.kind === 'duplicate' ? 'duplicate' : 'ignored-late';
    const marks = poolCoalescer<CallbackMark, boolean>(ctx.db, `mark-callbacks-${kind.name}`, (ms) => markCallbacks(ctx.db, kind, ms));
    const marked = await marks.call({ callbackId, outcome, id: row.id, from: { status: row.status, version: row.version } });
    return marked ? { outcome, callback } : 'changed';
  }
  if (d.kind !== 'move') return undefined;
  const details = { reason: 'provider-callback', providerRef: callback.providerRef, failureCode: callback.failureCode, failureMessage: callback.failureMessage, at: ctx.clock.now() };
  const updated = { ...row, ...changeOf(kind, row, d, trigger, details) } as R;

  let posting = null;
  if (d.effect) {
    const p = normalise(kind.posting(updated, d.effect));
    assertBalanced(p);
    if (!onlyCredits(p)) return undefined;
    const ids = new Map(read.accounts.map((a) => [accountKey(a), Number(a.id)]));
    if (p.entries.some((e) => !ids.has(accountKey(e.account)))) return undefined; // a first posting creates its accounts: the general path
    posting = {
      id: randomUUID(),
      kind: p.kind,
      referenceId: p.referenceId,
      merchantId: p.merchantId,
      currency: p.currency,
      entries: p.entries.map((e) => ({ account_id: ids.get(accountKey(e.account))!, amount: e.amount, unfolded: !allowsNegative(e.account) })),
    };
  }
  const event = d.event
    ? newEventRow({ merchantId: row.merchant_id, environment: row.environment, type: d.event, objectId: row.id, objectVersion: updated.version, object: kind.eventObject(updated), at: details.at })
    : null;
  const deliveries = event ? deliveryRows(event, subscribedEndpoints(read.endpoints, event.type), event.created) : [];
  const outbox = deliveries.map((del) => outboxMessage(QUEUES.webhookSender, DELIVER_JOB, deliverJob(del)));

  const written = await writes.call({
    id: row.id,
    from: { status: row.status, version: row.version },
    set: {
      status: updated.status,
      version: updated.version,
      updated_at: (updated as unknown as { updated_at: Date }).updated_at,
      completed: updated.completed,
      failure_code: updated.failure_code,
      failure_message: updated.failure_message,
      provider_ref: updated.provider_ref,
    },
    reason: d.correction ?? details.reason,
    callbackId,
    merchantId: row.merchant_id,
    environment: row.environment,
    event: event && { id: event.id, type: event.type, created: event.created, body: storedBody(event) },
    deliveries,
    outbox,
    posting,
  });
  if (!written) return 'changed';
  await publishOutbox(ctx.db, ctx.queues, outbox, log);
  return { outcome: 'applied', callback };
}
