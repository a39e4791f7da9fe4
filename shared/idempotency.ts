import type { Db } from './db/knex';

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
 * Claims a key for a request in one statement: a new key is inserted `in_progress`; an expired
 * key (not yet purged) is free again; an `in_progress` key whose lock has passed is taken over,
 * but only by the same request (same hash). Otherwise the key's row tells: other request →
 * conflict; completed → its stored response; still running → in progress.
 */
export async function claimIdempotencyKey(db: Db, id: IdempotencyKeyId, req: IdempotentRequest): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    // ms precision, set by us: the exact value identifies our claim when we complete or release it
    const lock = new Date(Date.now() + IDEMPOTENCY_LOCK_MS);
    const { rows } = await db.raw(
      `insert into idempotency_keys as k
         (merchant_id, environment, key, method, path, request_hash, status, locked_until, expires_at)
       values (?, ?, ?, ?, ?, ?, 'in_progress', ?, now() + ? * interval '1 millisecond')
       on conflict (merchant_id, environment, key) do update set
         method = excluded.method, path = excluded.path, request_hash = excluded.request_hash,
         status = 'in_progress', response_status = null, response_headers = null, response_body = null,
         created_at = now(), locked_until = excluded.locked_until, expires_at = excluded.expires_at
       where k.expires_at <= now()
          or (k.status = 'in_progress' and k.locked_until <= now() and k.request_hash = excluded.request_hash)
       returning 1`,
      [id.merchantId, id.environment, id.key, req.method, req.path, req.hash, lock, IDEMPOTENCY_WINDOW_MS],
    );
    if (rows.length) return { kind: 'claimed', lock };
    const row = await db('idempotency_keys')
      .where(pk(id))
      .first('request_hash', 'status', 'response_status', 'response_headers', 'response_body');
    if (!row) continue; // released between our two statements: claim again
    if (row.request_hash !== req.hash) return { kind: 'conflict' };
    if (row.status === 'completed') {
      return { kind: 'replay', response: { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body ?? Buffer.alloc(0) } };
    }
    return { kind: 'in-progress' };
  }
  return { kind: 'in-progress' };
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
