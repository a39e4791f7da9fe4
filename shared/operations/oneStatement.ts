import type { ServiceContext } from '../context';
import { readCallbacksWithRows } from '../db/sql/operationReads';
import { markCallbacks, type CallbackMark } from '../providers/callbackOutcome';
import { accountKey } from '../ledger/postings';
import type { Logger } from '../logger';
import type { StoredCallback } from '../providers/connector';
import { storedCallback } from '../providers/stored';
import type { OperationKind } from './kind';
import { decideTransition } from './decision';
import { changeOf, creditOnly, creditPosting, operationWrite, writeAlone } from './transition';
import type { OperationRow } from '../db/rows';

/** What the one-statement path does with a callback: its move, or the outcome of one that changes nothing. */
type OneStatementOutcome = 'applied' | 'duplicate' | 'ignored-late' | 'already-processed';

/**
 * A callback's transition in two round trips and no explicit transaction: one read (the
 * callback, its operation, the merchant's endpoints and ledger accounts), `decideTransition`
 * (decision.ts) in the process, then the writer (transition.ts `writeAlone`), which also marks the callback applied.
 *
 * The write is the writer's compare-and-set: it happens only while the operation still has the
 * status and version it was read with and the callback is unprocessed, so it is exactly the move
 * decided; otherwise it is tried once more from a fresh read, and then the locked path
 * (applyStoredCallback) decides. Taken only for a move of a kind with no afterMove and a
 * credit-only posting (no balance to lock) on accounts that exist; anything else, a refusal
 * included, returns undefined. A repeat or a late report writes only its
 * callback's outcome, on the same compare-and-set terms. Concurrent callbacks of one kind share
 * their statements (the context's batches), each still a compare-and-set on its own row.
 */
export async function applyCallbackInOneStatement<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any>,
  callbackId: string,
  log: Logger,
): Promise<{ outcome: OneStatementOutcome; callback?: StoredCallback } | undefined> {
  if (kind.afterMove || !kind.posting) return undefined;
  // the reads of concurrent jobs are one statement
  const reads = ctx.batches.get(`read-callbacks-${kind.name}`, async (ids: string[]) => {
    const found = await readCallbacksWithRows<R>(ctx.db, kind.sql, ids);
    return ids.map((id) => found.get(id));
  });
  // a write refused because the row changed since it was read (most often the push's acceptance,
  // recorded while the callback was on its way) is tried once more from a fresh read
  for (let attempt = 0; attempt < 2; attempt++) {
    const read = await reads.call(callbackId);
    if (!read) return undefined;
    // a job run again (the relay's or the re-drive's copy): the outcome is committed, nothing to do
    if (read.callback.processed_at) return { outcome: 'already-processed' };
    const { row } = read;
    const callback = storedCallback(read.callback);
    const provider = ctx.providers.byProviderId(callback.provider);
    if (!provider) return undefined;
    const trigger = kind.reported(callback.status);
    const report = { provider, confirmed: callback.verified, amount: callback.amount, currency: callback.currency };
    const d = decideTransition(kind, row, trigger, report);
    // a refusal is recorded by the locked path (which first asks the provider about an unsigned callback)
    if (d.kind === 'refused') return undefined;
    if (d.kind === 'duplicate' || d.kind === 'late') {
      // a repeat (providers send again when we answer slowly) or a report on a closed operation
      // changes nothing but its own outcome: one shared statement, no transaction of its own
      const outcome = d.kind === 'duplicate' ? 'duplicate' : 'ignored-late';
      const marks = ctx.batches.get(`mark-callbacks-${kind.name}`, (ms: CallbackMark[]) =>
        markCallbacks(ctx.db, kind.sql, ms),
      );
      if (await marks.call({ callbackId, outcome, id: row.id, from: { status: row.status, version: row.version } }))
        return { outcome, callback };
      continue;
    }
    if (d.kind !== 'move') return undefined;
    const details = {
      reason: 'provider-callback',
      providerRef: callback.providerRef,
      failureCode: callback.failureCode,
      failureMessage: callback.failureMessage,
      at: ctx.clock.now(),
    };
    const change = changeOf(kind, row, d, trigger, details);
    let posting = null;
    if (d.effect) {
      const credit = creditOnly(kind.posting({ ...row, ...change }, d.effect));
      if (!credit) return undefined;
      // a first posting creates its accounts: the locked path
      posting = creditPosting(credit, new Map(read.accounts.map((a) => [accountKey(a), Number(a.id)])));
      if (!posting) return undefined;
    }
    const write = operationWrite(kind, row, d, trigger, details, change, {
      endpoints: read.endpoints,
      posting,
      callbackId,
    });
    if (!(await writeAlone(ctx, kind, write))) continue;
    await ctx.outbox.publish(write.outbox, log);
    return { outcome: 'applied', callback };
  }
  return undefined;
}
