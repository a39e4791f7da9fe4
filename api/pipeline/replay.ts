import type { Middleware } from 'koa';
import { Conflict } from '../../shared/errors';
import { acceptSignatureOnce } from '../../shared/requestSignatures';
import { TIMESTAMP_TOLERANCE_S } from './timestamp';

/**
 * After the idempotency step (decisions.md "Refund retries"): a signed POST without an
 * Idempotency-Key is accepted once. The same request sent again (the same signature, which
 * covers its timestamp, method, path and body) while its timestamp is within the tolerance is
 * refused with 409 request-replayed, whether the first is still running or done: a replayed
 * request never acts twice. A merchant retrying on purpose signs again (a new X-Timestamp) or
 * sends an Idempotency-Key. The record is in Postgres (shared/requestSignatures.ts).
 */
export const replayGuard: Middleware = async (ctx, next) => {
  if (ctx.method !== 'POST' || ctx.get('Idempotency-Key')) return next();
  const auth = ctx.state.auth!;
  const accepted = await acceptSignatureOnce(
    ctx.services.db,
    { merchantId: auth.merchantId, environment: auth.environment, signature: ctx.get('X-Signature'), timestamp: Number(ctx.get('X-Timestamp')) },
    TIMESTAMP_TOLERANCE_S,
  );
  if (!accepted) {
    throw new Conflict('request-replayed', 'This signed request was already accepted; to send it again, sign it again (a new X-Timestamp) or send an Idempotency-Key');
  }
  return next();
};
