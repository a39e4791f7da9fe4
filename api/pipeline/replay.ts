import type { Middleware } from 'koa';
import { Conflict, DomainError } from '../../shared/errors';
import { forgetSignature, useSignature, type SignedRequest } from '../../shared/requestSignatures';
import { httpError } from '../middleware/errors';
import { presentedKey, releasesKey } from './idempotency';
import { TIMESTAMP_TOLERANCE_S } from './signed';

/**
 * Before the idempotency step (decisions.md "Replayed signed requests"): the Idempotency-Key
 * header is not signed, so a signature, not a key, identifies a request, and an accepted
 * signature acts at most once. Every signed POST records its signature (which covers its
 * timestamp, method, path and body) with the key it came with, in Postgres
 * (shared/requestSignatures.ts), until its timestamp leaves the tolerance. The same signature
 * again, while the first is still running or done:
 * - with the key of its first use: on to the idempotency step, which answers with that key
 *   (the first answer replayed, or 409 idempotency-in-progress);
 * - with no key or any other key: 409 request-replayed, and nothing happens.
 * A merchant retrying on purpose signs again (a new X-Timestamp) or sends the same key.
 * A request refused without leaving a record (a 4xx without a key, or a 400 that frees its key)
 * forgets its signature, so that a refusal changes nothing; a stored refusal keeps it (its key
 * answers), and a failure (5xx) keeps it, since its work may have committed.
 */
export const replayGuard: Middleware = async (ctx, next) => {
  if (ctx.method !== 'POST') return next();
  const auth = ctx.state.auth!;
  const { db } = ctx.services;
  // a key counts only where the route takes one (elsewhere it is ignored, and so is it here)
  const key = presentedKey(ctx) ?? null;
  const signed: SignedRequest = {
    merchantId: auth.merchantId,
    environment: auth.environment,
    signature: ctx.get('X-Signature').toLowerCase(),
    timestamp: Number(ctx.get('X-Timestamp')),
    idempotencyKey: key,
  };
  if ((await useSignature(db, signed, TIMESTAMP_TOLERANCE_S)) === 'replayed') {
    throw new Conflict('request-replayed', 'This signed request was already accepted; to send it again, sign it again (a new X-Timestamp) or send the Idempotency-Key of its first use');
  }
  const leftNoRecord = (status: number) => status >= 400 && status < 500 && (key === null || releasesKey(status));
  try {
    await next();
  } catch (err) {
    const status = err instanceof DomainError ? httpError(err).status : ((err as { status?: number }).status ?? 500);
    if (leftNoRecord(status)) await forgetSignature(db, signed);
    throw err;
  }
  if (leftNoRecord(ctx.status)) await forgetSignature(db, signed);
};
