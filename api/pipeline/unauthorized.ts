import type { Middleware } from 'koa';
import { Unauthenticated, type UnauthenticatedCode } from '../../shared/errors';

/** The challenge of every merchant 401, whichever step refused. */
const CHALLENGE = 'Bearer realm="api"';

/** Headers an earlier step may have set that a 401 must not carry (they would differ by step). */
const STEP_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'];

/** A merchant 401: the code says which check failed, with its one fixed message, and nothing more. */
export function unauthorized(code: UnauthenticatedCode): Unauthenticated {
  return new Unauthenticated(code, undefined, CHALLENGE);
}

/**
 * Outermost step: every 401 leaves with the same headers whichever step threw it (uniform 401s
 * win over rate-limit headers on every response; the request was still counted).
 */
export const uniform401: Middleware = async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    if (err instanceof Unauthenticated) for (const h of STEP_HEADERS) ctx.remove(h);
    throw err;
  }
};
