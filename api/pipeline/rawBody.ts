import type { Middleware } from 'koa';
import { PAYMENT_BODY_LIMIT, V1_BODY_LIMIT, readRawBody } from '../body';
import { SIGNED_METHODS, canonicalPath } from './request';

/** Body cap of a merchant request: 100 KB for POST /v1/payments (spec 8), 1 MB for any other. */
export function bodyLimitFor(method: string, path: string): number {
  return method === 'POST' && canonicalPath(path) === '/v1/payments' ? PAYMENT_BODY_LIMIT : V1_BODY_LIMIT;
}

/**
 * Reads the exact bytes of a signed request's body into ctx.state.rawBody (the signature covers
 * them), with its route's limit → 413 payload-too-large. It runs only once the caller is known,
 * allowed, not rate-limited and its timestamp fresh, so nobody else makes us buffer a body.
 * Other methods' bodies are never read.
 */
export const rawBody: Middleware = async (ctx, next) => {
  if (SIGNED_METHODS.has(ctx.method)) await readRawBody(ctx, bodyLimitFor(ctx.method, ctx.path));
  return next();
};
