import type { Middleware } from 'koa';
import type { Scope } from '../../shared/db/models';
import { Forbidden } from '../../shared/errors';
import { canonicalPath } from './request';

/**
 * Spec 5.5 as a pure function. read: GET (and HEAD) only; payments: read plus POST /v1/payments
 * (creation; a refund needs full); full: everything. Paths are compared as the router matches
 * them (canonicalPath).
 */
export function scopeAllows(scope: Scope, method: string, path: string): boolean {
  if (scope === 'full') return true;
  if (method === 'GET' || method === 'HEAD') return true;
  return scope === 'payments' && method === 'POST' && canonicalPath(path) === '/v1/payments';
}

/**
 * Scope check, after the signature and before content type, JSON and idempotency: a key is
 * refused what its scope does not allow only once the request is known to be genuinely its own,
 * and a refused request never parses a body or reserves an idempotency key.
 */
export const scope: Middleware = async (ctx, next) => {
  if (!scopeAllows(ctx.state.auth!.scope, ctx.method, ctx.path)) throw new Forbidden('insufficient-scope', "This API key's scope does not allow this request");
  return next();
};
