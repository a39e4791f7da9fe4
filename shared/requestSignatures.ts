import { raw } from 'objection';
import type { Db } from './db/knex';
import { RequestSignature, type Environment } from './db/models';

/**
 * Used signatures (decisions.md "Replayed signed requests"): the Idempotency-Key header is not
 * signed, so a signature identifies a request, and an accepted signature acts at most once. A
 * record is kept, with the key it was first accepted with, while its timestamp is within the
 * tolerance. It lives in Postgres: a Redis record lost to a flush or a restart without
 * persistence would let a replay act twice.
 */

export interface SignedRequest {
  merchantId: string;
  environment: string;
  /** X-Signature as verified (lowercase hex). */
  signature: string;
  /** X-Timestamp, Unix seconds. */
  timestamp: number;
  /** The Idempotency-Key presented (lower case), or null. */
  idempotencyKey: string | null;
}

/**
 * What a signature's record says of this request:
 * - `first`: the signature is new, now recorded (committed before the route runs);
 * - `same-key`: it was accepted before with this very Idempotency-Key, which answers it;
 * - `replayed`: it was accepted before, and this request has no key or another one.
 */
export type SignatureUse = 'first' | 'same-key' | 'replayed';

export async function useSignature(db: Db, req: SignedRequest, toleranceS: number): Promise<SignatureUse> {
  const inserted = await db(RequestSignature.tableName)
    .insert({ ...idOf(req), idempotency_key: req.idempotencyKey, expires_at: new Date((req.timestamp + toleranceS) * 1000) })
    .onConflict(['merchant_id', 'environment', 'signature'])
    .ignore()
    .returning('signature');
  if (inserted.length) return 'first';
  const seen = await RequestSignature.query(db).findById([req.merchantId, req.environment, req.signature]).select('idempotency_key');
  // purged between the two statements: its timestamp has left the tolerance, the timestamp step refuses it next time
  if (!seen) return 'replayed';
  return req.idempotencyKey !== null && seen.idempotency_key === req.idempotencyKey ? 'same-key' : 'replayed';
}

/** Forgets the signature of a request that was refused and left no record (it did nothing), so that it changed nothing. */
export async function forgetSignature(db: Db, req: SignedRequest): Promise<void> {
  await RequestSignature.query(db).findById([req.merchantId, req.environment, req.signature]).delete();
}

export async function purgeExpiredSignatures(db: Db): Promise<number> {
  return RequestSignature.query(db).where('expires_at', '<', raw('now()')).delete();
}

function idOf(req: SignedRequest) {
  return { merchant_id: req.merchantId, environment: req.environment as Environment, signature: req.signature };
}
