import type { Db } from './db/knex';

/**
 * Seen signatures (decisions.md "Refund retries"): a signed POST without Idempotency-Key is
 * accepted once. Its signature covers its timestamp, method, path and body, so the same
 * signature is the same request sent again; it can be sent again only while its timestamp is
 * within the tolerance, so a record is kept until then. The record lives in Postgres, the one
 * source of truth: a Redis record lost to a flush or a restart without persistence would let a
 * replay act twice.
 */

export interface SignedRequest {
  merchantId: string;
  environment: string;
  /** X-Signature as verified (lowercase hex). */
  signature: string;
  /** X-Timestamp, Unix seconds. */
  timestamp: number;
}

/**
 * Records the signature, in one statement committed before the route runs; false when it was
 * already recorded (the request is a replay, whether the first one is still running or done).
 */
export async function acceptSignatureOnce(db: Db, req: SignedRequest, toleranceS: number): Promise<boolean> {
  const { rows } = await db.raw(
    `insert into request_signatures (merchant_id, environment, signature, expires_at)
     values (?, ?, ?, to_timestamp(?))
     on conflict (merchant_id, environment, signature) do nothing
     returning 1`,
    [req.merchantId, req.environment, req.signature, req.timestamp + toleranceS],
  );
  return rows.length === 1;
}

/** Forgets the signature of a request that was refused (a 4xx: it did nothing), so that it changed nothing. */
export async function forgetSignature(db: Db, req: SignedRequest): Promise<void> {
  await db('request_signatures').where({ merchant_id: req.merchantId, environment: req.environment, signature: req.signature }).del();
}

export async function purgeExpiredSignatures(db: Db): Promise<number> {
  return db('request_signatures').where('expires_at', '<', db.fn.now()).del();
}
