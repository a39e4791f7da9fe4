import { randomUUID } from 'node:crypto';
import type { TransactDeps } from '../db/transact';
import { QUEUES } from '../queues/names';
import type { Logger } from '../logger';
import { outboxMessage, type OutboxMessage } from '../queues/outbox';
import type { WorkSource } from '../queues/redrive';
import type { Batches } from '../db/coalescer';
import { insertCallbacksWithJobs, unappliedCallbackIds, type InboxRow } from '../db/sql/callbacks';
import type { NormalisedCallback, ProviderEndpoint, Verification } from './connector';
import { traceparentNow } from '../tracing/spans';

/**
 * Inbox of provider callbacks (docs/decisions.md#provider-operations): the web stores a verified callback raw with
 * the job that applies it and answers at once; the callback-reconciler applies each exactly once.
 */

const APPLY_CALLBACK_JOB = 'apply-callback';

/** The most callbacks one callback-reconciler job names. */
export const CALLBACKS_PER_JOB = 100;

interface Arrival {
  row: InboxRow;
  requestId?: string;
  log?: Logger;
  /** the trace context of the callback's request (shared/tracing), taken in its own context */
  traceparent: string | null;
}

/**
 * A lone callback's job names it (`callbackId`, with its request id and trace); callbacks stored
 * together get one job per kind (`callbackIds`, comma-separated), applied together on the
 * one-statement path (shared/operations/oneStatement.ts), with each one's trace in
 * `traceparents` (comma-separated, in the same order) when traces are on.
 */
function jobsFor(arrivals: Arrival[]): OutboxMessage[] {
  if (arrivals.length === 1) {
    const [{ row, requestId, traceparent }] = arrivals;
    return [
      outboxMessage(
        QUEUES.callbackReconciler,
        APPLY_CALLBACK_JOB,
        { callbackId: row.id, kind: row.object_kind, requestId },
        0,
        traceparent,
      ),
    ];
  }
  const byKind = new Map<string, Arrival[]>();
  for (const a of arrivals) {
    const same = byKind.get(a.row.object_kind);
    if (same) same.push(a);
    else byKind.set(a.row.object_kind, [a]);
  }
  return [...byKind].flatMap(([kind, all]) => {
    const jobs: OutboxMessage[] = [];
    for (let i = 0; i < all.length; i += CALLBACKS_PER_JOB) {
      const some = all.slice(i, i + CALLBACKS_PER_JOB);
      const traced = some.some((a) => a.traceparent)
        ? { traceparents: some.map((a) => a.traceparent ?? '').join(',') }
        : {};
      jobs.push(
        outboxMessage(
          QUEUES.callbackReconciler,
          APPLY_CALLBACK_JOB,
          { callbackIds: some.map((a) => a.row.id).join(','), kind, ...traced },
          0,
          null,
        ),
      );
    }
    return jobs;
  });
}

/**
 * Stores a verified callback and its outbox row in one statement (shared/db/sql/callbacks.ts); the
 * job is enqueued after commit. Concurrent requests share that statement, its commit and jobs.
 */
export async function storeCallback(
  deps: TransactDeps & { batches: Batches },
  provider: ProviderEndpoint,
  raw: Buffer,
  parsed: NormalisedCallback,
  verification: Exclude<Verification, 'invalid'>,
  requestId?: string,
): Promise<string> {
  const { db, outbox } = deps;
  const id = randomUUID();
  const store = deps.batches.get('store-callbacks', async (arrivals: Arrival[]) => {
    const jobs = jobsFor(arrivals);
    await insertCallbacksWithJobs(
      db,
      arrivals.map((a) => a.row),
      jobs,
    );
    await outbox.publish(jobs, arrivals[0].log);
    return arrivals.map(() => undefined);
  });
  await store.call({
    row: {
      id,
      provider: provider.id,
      raw_body: raw.toString('utf8'),
      verified: verification === 'verified',
      provider_event_id: parsed.eventId,
      object_kind: parsed.kind,
      object_id: parsed.objectId,
      reported_status: parsed.status,
      provider_ref: parsed.providerRef,
      failure_code: parsed.failureCode,
      failure_message: parsed.failureMessage,
      amount: parsed.amount,
      currency: parsed.currency,
    },
    requestId,
    log: deps.log,
    traceparent: traceparentNow(),
  });
  return id;
}

/**
 * The re-drive's source (shared/queues/redrive.ts): callbacks stored but not applied (their job
 * lost with Redis, or failed every attempt). Safe beside a live job: the apply locks the row.
 */
export const unappliedCallbacks: WorkSource = {
  name: 'callbacks',
  async find(db, { olderThan }, limit) {
    return (await unappliedCallbackIds(db, olderThan, limit)).map((id) => ({
      queue: QUEUES.callbackReconciler,
      job: APPLY_CALLBACK_JOB,
      data: { callbackId: id },
    }));
  },
};
