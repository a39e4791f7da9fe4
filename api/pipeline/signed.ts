import type { Middleware } from 'koa';
import { signRequest } from '../../shared/client/signing';
import { safeEqual } from '../../shared/crypto/secrets';
import { PAYMENT_BODY_LIMIT, V1_BODY_LIMIT, readRawBody } from '../body';
import { SIGNED_METHODS, canonicalPath } from './request';
import { unauthorized } from './unauthorized';

/** The timestamp tolerance: +/- 5 minutes (docs/decisions.md#merchant-pipeline). */
export const TIMESTAMP_TOLERANCE_S = 300;
const UNIX_SECONDS = /^\d{1,12}$/;

/** True when `raw` is an integer number of Unix seconds strictly within the tolerance of `nowS`. */
export function timestampFresh(raw: string, nowS: number): boolean {
  return UNIX_SECONDS.test(raw) && Math.abs(nowS - Number(raw)) < TIMESTAMP_TOLERANCE_S;
}

/** Body cap of a merchant request: 100 KB for POST /v1/payments (the specification's cap), 1 MB for any other. */
export function bodyLimitFor(method: string, path: string): number {
  return method === 'POST' && canonicalPath(path) === '/v1/payments' ? PAYMENT_BODY_LIMIT : V1_BODY_LIMIT;
}

/**
 * True when `presented` is the signature of docs/decisions.md#merchant-pipeline: lowercase hex HMAC-SHA256 of
 * `<timestamp>.<METHOD>.<path>.<raw body>` under the merchant secret. Constant time; any length
 * or garbage is simply false.
 */
export function signatureValid(
  secret: string,
  timestamp: string,
  method: string,
  path: string,
  body: Buffer,
  presented: string,
): boolean {
  return safeEqual(presented, signRequest(secret, timestamp, method, path, body));
}

/**
 * Steps 7-8 of the pipeline (docs/decisions.md#merchant-pipeline), signed methods only; other methods' bodies are never read.
 * X-Timestamp missing, not an integer or |now - ts| >= 300 s → 401 timestamp-expired. Then the
 * exact body bytes go to ctx.state.rawBody, capped by route → 413 payload-too-large: only once
 * the caller is known, allowed, not rate-limited and fresh, so nobody else makes us buffer a
 * body. Then X-Signature over the path as sent (no query string) and those bytes → 401
 * signature-invalid.
 */
export const signed: Middleware = async (ctx, next) => {
  if (!SIGNED_METHODS.has(ctx.method)) return next();
  // the service clock (shared/clock.ts), as every freshness rule: the system clock in production
  if (!timestampFresh(ctx.get('X-Timestamp'), Math.floor(ctx.services.clock.now() / 1000)))
    throw unauthorized('timestamp-expired');
  const body = await readRawBody(ctx, bodyLimitFor(ctx.method, ctx.path));
  if (
    !signatureValid(ctx.state.auth!.secret, ctx.get('X-Timestamp'), ctx.method, ctx.path, body, ctx.get('X-Signature'))
  ) {
    throw unauthorized('signature-invalid');
  }
  return next();
};
