import type { Middleware } from 'koa';
import { DomainError } from '../../shared/errors';
import { forgetSignature, requestReplayed, useSignature, type SignedRequest } from '../../shared/requestSignatures';
import { httpError } from '../middleware/errors';
import { presentedKey, releasesKey } from './idempotency';
import { signatureTakenWithKey } from './request';
import { TIMESTAMP_TOLERANCE_S } from './signed';

/**
 * Before the idempotency step (docs/decisions.md#replayed-signed-requests): the Idempotency-Key
 * header is not signed, so a signature identifies a request, and acts at most once. Every
 * signed POST records its signature with the key it came with (shared/requestSignatures.ts)
 * until its timestamp leaves the tolerance: before its route, or with its key and its work
 * (api/pipeline/request.ts). The same signature again with the key of its first use goes on to the
 * idempotency step; with no key or another: 409 request-replayed.
 * A refusal that left no record (a 4xx without a key, or a 400 that frees its key) forgets its
 * signature; a stored refusal keeps it, and so does a 5xx, since its work may have committed.
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
  if (key !== null && signatureTakenWithKey(ctx.method, ctx.path)) {
    // taken by the statement that writes the work; the idempotency step answers a request whose
    // statement wrote nothing, a replay included. A refusal before it took nothing: nothing to forget
    ctx.state.signed = signed;
    return next();
  }
  if ((await useSignature(ctx.services, signed, TIMESTAMP_TOLERANCE_S)) === 'replayed') throw requestReplayed();
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
