import type { Middleware } from 'koa';
import { Unauthenticated } from '../../shared/errors';
import { safeEqual } from '../../shared/crypto/secrets';

function presentedToken(authorization: string): string | undefined {
  const bearer = /^Bearer (\S+)$/.exec(authorization);
  if (bearer) return bearer[1];
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * Operator authentication: ADMIN_API_TOKEN as a bearer token, or as the password of HTTP basic
 * (so a browser can open Bull Board). Compared in constant time.
 */
export const adminAuth: Middleware = async (ctx, next) => {
  const token = presentedToken(ctx.get('Authorization'));
  if (token === undefined || !safeEqual(token, ctx.services.config.adminApiToken)) {
    const challenge = ctx.path.startsWith('/admin/queues') ? 'Basic realm="operator", charset="UTF-8"' : undefined;
    throw new Unauthenticated('auth-required', 'Operator authentication required', challenge);
  }
  return next();
};
