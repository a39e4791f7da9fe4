import { raw } from 'objection';
import { isUniqueViolation } from './db/errors';
import type { Db } from './db/knex';
import { RequestSignature, type Environment } from './db/models';

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
  try {
    await RequestSignature.query(db).insert({ ...signatureOf(req), expires_at: new Date((req.timestamp + toleranceS) * 1000) });
    return true;
  } catch (err) {
    if (isUniqueViolation(err, 'request_signatures_pkey')) return false;
    throw err;
  }
}

/** Forgets the signature of a request that was refused (a 4xx: it did nothing), so that it changed nothing. */
export async function forgetSignature(db: Db, req: SignedRequest): Promise<void> {
  await RequestSignature.query(db).findById([req.merchantId, req.environment, req.signature]).delete();
}

export async function purgeExpiredSignatures(db: Db): Promise<number> {
  return RequestSignature.query(db).where('expires_at', '<', raw('now()')).delete();
}

function signatureOf(req: SignedRequest) {
  return { merchant_id: req.merchantId, environment: req.environment as Environment, signature: req.signature };
}
