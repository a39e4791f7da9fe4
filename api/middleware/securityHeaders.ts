import type { Middleware } from 'koa';

const THREEDS_RETURN = /^\/checkout\/[^/]+\/3ds-(return|challenge)\/?$/;

/** HSTS (docs/decisions.md#http-frame-and-operator-api): the web's on every answer, and the TLS edge's (scripts/cluster.ts) */
export const HSTS = 'max-age=63072000; includeSubDomains; preload';

const COMMON: Record<string, string> = {
  'Strict-Transport-Security': HSTS,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Permissions-Policy': 'geolocation=(), microphone=(), camera=()',
  Server: 'Service',
};

/** Security headers of docs/decisions.md#http-frame-and-operator-api on every response, errors included; never a cookie. */
export const securityHeaders: Middleware = async (ctx, next) => {
  ctx.set(COMMON);
  if (THREEDS_RETURN.test(ctx.path)) {
    ctx.set('X-Frame-Options', 'SAMEORIGIN');
    ctx.set('Content-Security-Policy', "frame-ancestors 'self'");
  } else {
    ctx.set('X-Frame-Options', 'DENY');
  }
  try {
    await next();
  } finally {
    ctx.remove('Set-Cookie');
    ctx.remove('X-Powered-By');
  }
};
