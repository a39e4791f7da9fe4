import type { Db, Trx } from './knex';
import type { QueueRegistry } from '../queues/registry';
import type { Logger } from '../logger';
import { publishOutbox, writeOutbox, type OutboxMessage } from '../queues/outbox';
import type { JobData, QueueName } from '../queues/names';

/** Collects the jobs a transaction wants; they are enqueued only once it has committed. */
export interface OutboxWriter {
  add(queue: QueueName, jobName: string, payload: JobData, delayMs?: number): Promise<OutboxMessage>;
}

export interface TransactDeps {
  db: Db;
  queues: QueueRegistry;
  log?: Logger;
}

/**
 * Runs `fn` in one Postgres transaction with an outbox writer, then publishes the outbox rows it
 * wrote (architecture rule 1). The one way every flow writes state together with its jobs.
 */
export async function transact<T>(deps: TransactDeps, fn: (trx: Trx, outbox: OutboxWriter) => Promise<T>): Promise<T> {
  const written: OutboxMessage[] = [];
  const result = await deps.db.transaction(async (trx) => {
    written.length = 0; // a retried transaction starts clean
    const outbox: OutboxWriter = {
      async add(queue, jobName, payload, delayMs = 0) {
        const msg = await writeOutbox(trx, queue, jobName, payload, delayMs);
        written.push(msg);
        return msg;
      },
    };
    return fn(trx, outbox);
  });
  await publishOutbox(deps.db, deps.queues, written, deps.log);
  return result;
}
