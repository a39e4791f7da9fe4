import type { Db, Executor, Trx } from './db/knex';
import { IdempotencyKey } from './db/models';
import { purgeIdempotencyKeys } from './retention';
import { runSql } from './db/sql/run';
import { TAKE_KEY, type KeyRow } from './idempotencySql';
import { transact, type OutboxWriter, type TransactDeps } from './db/transact';

/**
 * Idempotency keys (docs/decisions.md#merchant-pipeline), one mode for every route that takes them: the key is written in
 * the route's own transaction, with the route's answer. A second request with the same key
 * while the first runs finds the first one's uncommitted key in the unique index and waits
 * there for its transaction to end (Postgres does the waiting; no row is ever seen
 * `in_progress`): after a commit it gets the stored answer, after a rollback (a refusal, a
 * failure, a crashed process) it takes the key itself. The wait is bounded by `waitMs`
 * (lock_timeout, set for the key's statement only); past it, the route is told the key is held
 * and the request answers 409 idempotency-in-progress.
 */

/** Idempotency keys live 24 hours (docs/decisions.md#merchant-pipeline); expired ones are purged by the outbox-relay pool. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

/** Expired keys (their window ended before `nowMs`, the service clock: shared/clock.ts), deleted in bounded batches (shared/retention.ts). */
export function purgeExpiredIdempotencyKeys(db: Db, nowMs: number): Promise<number> {
  return purgeIdempotencyKeys(db, { now: nowMs });
}

/** One key: unique per merchant and environment (docs/decisions.md#merchant-pipeline). */
export interface IdempotencyKeyId {
  merchantId: string;
  environment: string;
  /** UUID v4, lower case. */
  key: string;
}

/** The key's row id (IdempotencyKey.idColumn). */
const idOf = (id: IdempotencyKeyId) => [id.merchantId, id.environment, id.key];

export interface IdempotentRequest {
  method: string;
  path: string;
  /** Hash of method, path and body: same key + other hash is a conflict. */
  hash: string;
}

/** An answer as the web layer encodes it (status, the headers replayed, exact body bytes); stored and replayed as is. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** What a route needs to write its key; the web layer encodes the result (shared code never builds response bytes). */
export interface IdempotentWrite<T> {
  id: IdempotencyKeyId;
  request: IdempotentRequest;
  waitMs: number;
  /** the service clock at the request (Unix ms, shared/clock.ts): the key's window starts here */
  now: number;
  encode(result: T): StoredResponse;
  /** a signed request's signature, when it is taken with the key (api/pipeline/replay.ts) */
  signature?: { signature: string; expires: number };
}

/** What a key already held by another request means for this one. */
export type HeldKey = { kind: 'replay'; response: StoredResponse } | { kind: 'conflict' } | { kind: 'in-progress' };

/** Thrown by a route whose key another request holds (committed, or running past the wait): nothing was written. */
export class IdempotencyKeyHeld extends Error {
  constructor() {
    super('idempotency key held by another request');
  }
}

const LOCK_TIMEOUT = '55P03';

/**
 * The values of the statement that takes a key (shared/idempotencySql.ts): a new key is
 * inserted; an expired key (not yet purged) is free again; a key left `in_progress` by an older
 * version of this service is taken over after its lock passed, by the same request only.
 * `response` null writes it `in_progress` (completed later in the same transaction); otherwise
 * `completed` with that answer.
 */
export function takeKeyValues(key: IdempotentWrite<unknown>, response: StoredResponse | null): unknown[] {
  return [
    key.id.merchantId,
    key.id.environment,
    key.id.key,
    key.request.method,
    key.request.path,
    key.request.hash,
    response ? 'completed' : 'in_progress',
    response?.status ?? null,
    response ? JSON.stringify(response.headers) : null,
    response?.body ?? null,
    IDEMPOTENCY_WINDOW_MS,
    key.now,
  ];
}

/** The key and its answer as a creation carries it into the writer (shared/operations/writer.ts). */
export function keyRow(key: IdempotentWrite<unknown>, response: StoredResponse | null): KeyRow {
  const [
    merchant_id,
    environment,
    id,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    body,
    window_ms,
    now_ms,
  ] = takeKeyValues(key, response) as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    number | null,
    string | null,
    Buffer | null,
    number,
    number,
  ];
  const signature = key.signature?.signature ?? null;
  const signature_expires = key.signature?.expires ?? null;
  return {
    merchant_id,
    environment,
    key: id,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    response_body: body?.toString('base64') ?? null,
    window_ms,
    now_ms,
    signature,
    signature_expires,
  };
}

/**
 * Runs the key's statement alone, waiting at most `waitMs` for a transaction holding the key;
 * true when the key was taken, false when another request holds it (or still did when the wait,
 * a lock timeout, ran out).
 */
async function takeKey(db: Executor, key: IdempotentWrite<unknown>, response: StoredResponse | null): Promise<boolean> {
  const wait = `${Math.max(1, Math.round(key.waitMs))}ms`;
  try {
    return (await runSql(db, TAKE_KEY, [...takeKeyValues(key, response), wait])).length === 1;
  } catch (err) {
    if ((err as { code?: string })?.code === LOCK_TIMEOUT) return false;
    throw err;
  }
}

/**
 * `transact` for a route that may carry an Idempotency-Key: the key is taken `in_progress` by the
 * transaction's first statement (IdempotencyKeyHeld if another request holds it) and completed
 * with the encoded result before the commit, so the key and the work commit together or not at
 * all. Without a key, plain `transact`.
 */
export async function idempotentTransact<T>(
  deps: TransactDeps,
  key: IdempotentWrite<T> | undefined,
  fn: (trx: Trx, outbox: OutboxWriter) => Promise<T>,
): Promise<T> {
  if (!key) return transact(deps, fn);
  return transact(deps, async (trx, outbox) => {
    if (!(await takeKey(trx, key, null))) throw new IdempotencyKeyHeld();
    const result = await fn(trx, outbox);
    const response = key.encode(result);
    await IdempotencyKey.query(trx).findById(idOf(key.id)).patch({
      status: 'completed',
      response_status: response.status,
      response_headers: response.headers,
      response_body: response.body,
    });
    return result;
  });
}

/** What a key already held by another request means for this one; null if it is free (released meanwhile). */
export async function readIdempotencyKey(
  db: Db,
  id: IdempotencyKeyId,
  req: IdempotentRequest,
  nowMs: number,
): Promise<HeldKey | null> {
  // the service clock decides a key's expiry, as in the statement that takes a key (shared/idempotencySql.ts)
  const row = await IdempotencyKey.query(db)
    .findById(idOf(id))
    .where('expires_at', '>', new Date(nowMs))
    .select('request_hash', 'status', 'response_status', 'response_headers', 'response_body');
  if (!row) return null;
  if (row.request_hash !== req.hash) return { kind: 'conflict' };
  if (row.status === 'completed') {
    return {
      kind: 'replay',
      response: {
        status: row.response_status!,
        headers: row.response_headers ?? {},
        body: row.response_body ?? Buffer.alloc(0),
      },
    };
  }
  return { kind: 'in-progress' };
}

/**
 * Stores the answer of a request that wrote nothing (a refusal: 404, 409, 422) under its key, in
 * one statement after the route's transaction ended; false if another request took the key
 * meanwhile (that request's answer stands).
 */
export function storeIdempotentResponse(
  db: Db,
  key: IdempotentWrite<unknown>,
  response: StoredResponse,
): Promise<boolean> {
  return takeKey(db, key, response);
}
