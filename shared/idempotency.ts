import type { Db } from './db/knex';
import { TAKE_KEY } from './db/sql/idempotencyKeys';
import { runSql } from './db/sql/run';

/** Idempotency keys live 24 hours (spec 8); expired ones are purged by the outbox-relay pool. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

/**
 * How long a request may hold its key `in_progress`. Past this, the web process that claimed it
 * is taken for dead (crashed mid-request) and the same request may take the key over.
 */
export const IDEMPOTENCY_LOCK_MS = 60_000;

export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  return db('idempotency_keys').where('expires_at', '<', db.fn.now()).del();
}

/** One key: unique per merchant and environment (spec 5.4, architecture rule 5). */
export interface IdempotencyKeyId {
  merchantId: string;
  environment: string;
  /** UUID v4, lower case. */
  key: string;
}

export interface IdempotentRequest {
  method: string;
  path: string;
  /** Hash of method, path and body: same key + other hash is a conflict. */
  hash: string;
}

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type Claim =
  /** This request owns the key until `lock` (the fencing value for complete/release). */
  | { kind: 'claimed'; lock: Date }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'conflict' }
  | { kind: 'in-progress' };

const pk = (id: IdempotencyKeyId) => ({ merchant_id: id.merchantId, environment: id.environment, key: id.key });

/**
 * The values of the one statement that takes a key (shared/db/sql/idempotencyKeys.ts): a new key
 * is inserted; an expired key (not yet purged) is free again; an `in_progress` key whose lock has
 * passed is taken over, but only by the same request (same hash). It returns one row when the
 * key was taken, none when another request holds it. `response` null takes the key
 * `in_progress` until `lock`; a response takes it `completed` with that answer, for a route whose
 * work is written in the same statement.
 */
function takeKeyValues(id: IdempotencyKeyId, req: IdempotentRequest, state: { lock: Date } | { response: StoredResponse }): unknown[] {
  const response = 'response' in state ? state.response : null;
  return [
    id.merchantId,
    id.environment,
    id.key,
    req.method,
    req.path,
    req.hash,
    response ? 'completed' : 'in_progress',
    response?.status ?? null,
    response ? JSON.stringify(response.headers) : null,
    response?.body ?? null,
    'lock' in state ? state.lock : null,
    IDEMPOTENCY_WINDOW_MS,
  ];
}

/** What a key already held by another request means for this one. */
export async function readIdempotencyKey(db: Db, id: IdempotencyKeyId, req: IdempotentRequest): Promise<Exclude<Claim, { kind: 'claimed' }> | null> {
  const row = await db('idempotency_keys')
    .where(pk(id))
    .first('request_hash', 'status', 'response_status', 'response_headers', 'response_body');
  if (!row) return null; // released in the meantime
  if (row.request_hash !== req.hash) return { kind: 'conflict' };
  if (row.status === 'completed') {
    return { kind: 'replay', response: { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body ?? Buffer.alloc(0) } };
  }
  return { kind: 'in-progress' };
}

/**
 * Claims a key for a request before its route runs (the claim-first routes): the key is held
 * `in_progress` until the route's answer is stored by completeIdempotencyKey.
 */
export async function claimIdempotencyKey(db: Db, id: IdempotencyKeyId, req: IdempotentRequest): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    // ms precision, set by us: the exact value identifies our claim when we complete or release it
    const lock = new Date(Date.now() + IDEMPOTENCY_LOCK_MS);
    const rows = await runSql(db, TAKE_KEY, takeKeyValues(id, req, { lock }));
    if (rows.length) return { kind: 'claimed', lock };
    const held = await readIdempotencyKey(db, id, req);
    if (held) return held;
  }
  return { kind: 'in-progress' };
}

/**
 * The key's values for a route that writes it with its work (the atomic routes): the route's
 * statement takes the key first and writes its work only if it was taken. A request with the
 * same key that arrives meanwhile waits for that transaction, then finds the key taken.
 */
export function keyWrittenWith(id: IdempotencyKeyId, req: IdempotentRequest, response: StoredResponse): unknown[] {
  return takeKeyValues(id, req, { response });
}

/** Thrown by an atomic route whose statement found its key held by another request: nothing was written. */
export class IdempotencyKeyHeld extends Error {
  constructor() {
    super('idempotency key held by another request');
  }
}

/** A JSON answer as sent and stored: exact bytes and the Content-Type Koa gives a JSON body. */
export function jsonAnswer(status: number, body: unknown): StoredResponse {
  return { status, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: Buffer.from(JSON.stringify(body), 'utf8') };
}

/** Stores an answer under a free key in one statement (an atomic route's answer without work, such as a 422); false if the key is held. */
export async function storeIdempotentResponse(db: Db, id: IdempotencyKeyId, req: IdempotentRequest, response: StoredResponse): Promise<boolean> {
  const rows = await runSql(db, TAKE_KEY, takeKeyValues(id, req, { response }));
  return rows.length === 1;
}

/** Stores the response of the request that holds the key; false if it no longer held it. */
export async function completeIdempotencyKey(db: Db, id: IdempotencyKeyId, lock: Date, response: StoredResponse): Promise<boolean> {
  const n = await db('idempotency_keys')
    .where(pk(id))
    .andWhere({ status: 'in_progress', locked_until: lock })
    .update({
      status: 'completed',
      response_status: response.status,
      response_headers: JSON.stringify(response.headers),
      response_body: response.body,
      locked_until: null,
    });
  return n === 1;
}

/** Frees the key of a request that did nothing (refused by validation, or failed): it may be used again. */
export async function releaseIdempotencyKey(db: Db, id: IdempotencyKeyId, lock: Date): Promise<void> {
  await db('idempotency_keys').where(pk(id)).andWhere({ status: 'in_progress', locked_until: lock }).del();
}
