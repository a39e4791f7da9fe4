import type { Db, Trx } from './knex';
import type { Logger } from '../logger';
import { writeOutbox, type OutboxMessage, type OutboxPublisher } from '../queues/outbox';
import type { JobData, QueueName } from '../queues/names';
import type { Clock } from '../clock';

/** Collects the jobs a transaction wants; they are enqueued only once it has committed. */
export interface OutboxWriter {
  /** writes a job's outbox row now */
  add(queue: QueueName, jobName: string, payload: JobData, delayMs?: number): Promise<OutboxMessage>;
  /** rows the writer wrote with the flow's change (shared/operations/writer.ts), to enqueue as well */
  written(msgs: OutboxMessage[]): void;
}

export interface TransactDeps {
  db: Db;
  /** the process's outbox publisher (enqueues what a transaction wrote, once it has committed) */
  outbox: OutboxPublisher;
  log?: Logger;
  /** the process's clock: every stamp a flow writes comes from it (Postgres's now() only where a comment says why) */
  clock: Clock;
}

/** Postgres gave up this transaction to let another go on (deadlock, serialization): nothing of it is left, so it may run again. */
function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === '40P01' || code === '40001';
}
const ATTEMPTS = 3;

/**
 * Runs `fn` in one Postgres transaction with an outbox writer, then publishes the outbox rows it
 * wrote (docs/decisions.md#provider-operations). The one way every flow writes state together with its jobs. A
 * transaction Postgres chose as a deadlock's victim is run again (up to 3 times, after a short
 * random pause), so two writers crossing on one merchant's accounts never answer 500.
 */
export async function transact<T>(deps: TransactDeps, fn: (trx: Trx, outbox: OutboxWriter) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const written: OutboxMessage[] = [];
      const result = await deps.db.transaction(async (trx) =>
        fn(trx, {
          async add(queue, jobName, payload, delayMs = 0) {
            const msg = await writeOutbox(trx, queue, jobName, payload, delayMs);
            written.push(msg);
            return msg;
          },
          written(msgs) {
            written.push(...msgs);
          },
        }),
      );
      await deps.outbox.publish(written, deps.log);
      return result;
    } catch (err) {
      if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
      deps.log?.warn(
        { attempt, code: (err as { code?: string }).code },
        'transaction lost a deadlock; running it again',
      );
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}
