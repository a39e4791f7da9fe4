import type { Middleware } from 'koa';
import { Conflict, DomainError } from '../../shared/errors';
import { acceptSignatureOnce, forgetSignature, type SignedRequest } from '../../shared/requestSignatures';
import { httpError } from '../middleware/errors';
import { TIMESTAMP_TOLERANCE_S } from './timestamp';

/**
 * After the idempotency step (decisions.md "Refund retries"): a signed POST without an
 * Idempotency-Key is accepted once. The same request sent again (the same signature, which
 * covers its timestamp, method, path and body) while its timestamp is within the tolerance is
 * refused with 409 request-replayed, whether the first is still running or done: a replayed
 * request never acts twice. A merchant retrying on purpose signs again (a new X-Timestamp) or
 * sends an Idempotency-Key. The record is in Postgres (shared/requestSignatures.ts). A request
 * the route refuses (any 4xx: it did nothing) leaves no record, so a refusal changes nothing; one
 * that failed (5xx) keeps it, since its work may have committed: it is retried signed again.
 */
export const replayGuard: Middleware = async (ctx, next) => {
  if (ctx.method !== 'POST' || ctx.get('Idempotency-Key')) return next();
  const auth = ctx.state.auth!;
  const { db } = ctx.services;
  const signed: SignedRequest = { merchantId: auth.merchantId, environment: auth.environment, signature: ctx.get('X-Signature'), timestamp: Number(ctx.get('X-Timestamp')) };
  if (!(await acceptSignatureOnce(db, signed, TIMESTAMP_TOLERANCE_S))) {
    throw new Conflict('request-replayed', 'This signed request was already accepted; to send it again, sign it again (a new X-Timestamp) or send an Idempotency-Key');
  }
  const refused = (status: number) => status >= 400 && status < 500;
  try {
    await next();
  } catch (err) {
    const status = err instanceof DomainError ? httpError(err).status : ((err as { status?: number }).status ?? 500);
    if (refused(status)) await forgetSignature(db, signed);
    throw err;
  }
  if (refused(ctx.status)) await forgetSignature(db, signed);
};
