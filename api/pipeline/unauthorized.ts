import type { Middleware } from 'koa';
import { ApiError } from '../../shared/errors';

export type UnauthorizedCode = 'auth-required' | 'api-key-invalid' | 'timestamp-expired' | 'signature-invalid';

/** One fixed message per code: a 401 says which check failed (the code) and nothing more. */
const MESSAGES: Record<UnauthorizedCode, string> = {
  'auth-required': 'Authentication is required',
  'api-key-invalid': 'The API key is not valid',
  'timestamp-expired': 'The request timestamp is missing or outside the allowed window',
  'signature-invalid': 'The request signature is not valid',
};

/** Headers of every merchant 401, whichever step refused. */
const HEADERS_401: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'Bearer realm="api"' };

/** Headers an earlier step may have set that a 401 must not carry (they would differ by step). */
const STEP_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'];

export function unauthorized(code: UnauthorizedCode): ApiError {
  return new ApiError(401, code, MESSAGES[code], undefined, { ...HEADERS_401 });
}

/**
 * Outermost step: every 401 leaves with the same headers and shape whichever step threw it.
 * The rate-limit headers set by step 5 are removed from the timestamp and signature 401s, so
 * those look exactly like the bearer step's (decision: uniform 401s win over "rate-limit
 * headers on every response"; the request was still counted).
 */
export const uniform401: Middleware = async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      for (const h of STEP_HEADERS) ctx.remove(h);
    }
    throw err;
  }
};
