import type { Middleware } from 'koa';
import { signRequest } from '../../shared/client/signing';
import { safeEqual } from '../../shared/crypto/secrets';
import { SIGNED_METHODS } from './request';
import { unauthorized } from './unauthorized';

/**
 * True when `presented` is the spec 5.3 signature of the request: lowercase hex HMAC-SHA256 of
 * `<timestamp>.<METHOD>.<path>.<raw body>` under the merchant secret. Constant time; any length
 * or garbage is simply false.
 */
export function signatureValid(secret: string, timestamp: string, method: string, path: string, body: Buffer, presented: string): boolean {
  return safeEqual(presented, signRequest(secret, timestamp, method, path, body));
}

/**
 * Step 8 (spec 5.6.8): X-Signature on signed methods → 401 signature-invalid. The path is the
 * request path as sent (no query string), the body the bytes read by the rawBody step.
 */
export const signature: Middleware = async (ctx, next) => {
  if (SIGNED_METHODS.has(ctx.method)) {
    const body = ctx.state.rawBody ?? Buffer.alloc(0);
    const ok = signatureValid(ctx.state.auth!.secret, ctx.get('X-Timestamp'), ctx.method, ctx.path, body, ctx.get('X-Signature'));
    if (!ok) throw unauthorized('signature-invalid');
  }
  return next();
};
