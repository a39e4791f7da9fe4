import { Conflict } from './errors';
import type { Db } from './db/knex';
import { RequestSignature } from './db/models';
import { purgeRequestSignatures } from './retention';
import { runSql } from './db/sql/run';
import { USE_SIGNATURES } from './requestSignaturesSql';
import type { Batches } from './db/coalescer';

/**
 * Used signatures (docs/decisions.md#replayed-signed-requests): the Idempotency-Key header is not
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

/** The answer to a signed request that was accepted before, and comes with no key or another key. */
export function requestReplayed(): Conflict {
  return new Conflict(
    'request-replayed',
    'This signed request was already accepted; to send it again, sign it again (a new X-Timestamp) or send the Idempotency-Key of its first use',
  );
}

/** The key a signature was first accepted with (null: none); undefined when it has no record. */
async function recordedKey(db: Db, req: SignedRequest): Promise<string | null | undefined> {
  return (
    await RequestSignature.query(db)
      .findById([req.merchantId, req.environment, req.signature])
      .select('idempotency_key')
  )?.idempotency_key;
}

/** A request whose signature was accepted before, with `key`: answered by that key if it is its own, else replayed. */
const laterUse = (req: SignedRequest, key: string | null | undefined): Exclude<SignatureUse, 'first'> =>
  req.idempotencyKey !== null && key === req.idempotencyKey ? 'same-key' : 'replayed';

/** What a signature's record says of this request, when its route's statement did not take it: `null` if there is none. */
export async function signatureUse(db: Db, req: SignedRequest): Promise<Exclude<SignatureUse, 'first'> | null> {
  const key = await recordedKey(db, req);
  return key === undefined ? null : laterUse(req, key);
}

/**
 * Records a request's signature, batched with the signed POSTs of this process that arrive
 * meanwhile (one statement for them all: shared/requestSignaturesSql.ts).
 */
export function useSignature(
  deps: { db: Db; batches: Batches },
  req: SignedRequest,
  toleranceS: number,
): Promise<SignatureUse> {
  return deps.batches
    .get('use-signatures', (reqs: SignedRequest[]) => recordSignatures(deps.db, reqs, toleranceS))
    .call(req);
}

async function recordSignatures(db: Db, reqs: SignedRequest[], toleranceS: number): Promise<SignatureUse[]> {
  // a signature twice in one batch goes to Postgres once; its copies are answered by the first
  const idOf = (r: SignedRequest) => `${r.merchantId} ${r.environment} ${r.signature}`;
  const firsts = new Map<string, SignedRequest>();
  for (const r of reqs) if (!firsts.has(idOf(r))) firsts.set(idOf(r), r);
  const sent = [...firsts.values()];
  const elements = sent.map((r, i) => ({
    i,
    merchant_id: r.merchantId,
    environment: r.environment,
    signature: r.signature,
    key: r.idempotencyKey,
    expires: r.timestamp + toleranceS,
  }));
  const rows = await runSql<{ first: boolean; seen: { key: string | null } | null }>(db, USE_SIGNATURES, [
    JSON.stringify(elements),
  ]);
  // per signature: taken now, or the key it was first taken with (undefined: purged meanwhile, its timestamp has left the tolerance)
  const outcomes = new Map(
    await Promise.all(
      rows.map(async (row, i) => {
        const r = sent[i];
        // taken by a request that committed after the statement began: read again
        const key = row.first ? r.idempotencyKey : row.seen ? row.seen.key : await recordedKey(db, r);
        return [idOf(r), { first: row.first, key }] as const;
      }),
    ),
  );
  return reqs.map((r) => {
    const o = outcomes.get(idOf(r))!;
    return o.first && firsts.get(idOf(r)) === r ? 'first' : laterUse(r, o.key);
  });
}

/** Forgets the signature of a request that was refused and left no record (it did nothing), so that it changed nothing. */
export async function forgetSignature(db: Db, req: SignedRequest): Promise<void> {
  await RequestSignature.query(db).findById([req.merchantId, req.environment, req.signature]).delete();
}

/**
 * Deletes, in bounded batches (shared/retention.ts), the records whose timestamp left the
 * tolerance before `nowMs`: the service clock (shared/clock.ts), the one the signed step judges
 * a timestamp by, so a record outlives the time its request could be accepted again.
 */
export function purgeExpiredSignatures(db: Db, nowMs: number): Promise<number> {
  return purgeRequestSignatures(db, { now: nowMs });
}
