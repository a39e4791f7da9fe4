import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { maskPath } from '../../shared/logger';

const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * X-Request-Id: the caller's when it is a sane token, else a new one; echoed and bound to the
 * request's logger. One access log line per request: method, route template, the path with every
 * phone number masked, status, time; never headers, query strings or bodies.
 */
export const requestContext: Middleware = async (ctx, next) => {
  const incoming = ctx.get('X-Request-Id');
  const requestId = VALID_REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
  ctx.state.requestId = requestId;
  ctx.state.log = ctx.services.log.child({ requestId });
  ctx.set('X-Request-Id', requestId);
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    if (ctx.state.log.isLevelEnabled('info')) accessLine(ctx, Number(process.hrtime.bigint() - started) / 1e6);
  }
};

function accessLine(ctx: Context, ms: number): void {
  const route = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
  ctx.state.log.info(
    {
      method: ctx.method,
      ...(typeof route === 'string' ? { route } : {}),
      path: maskPath(ctx.path),
      status: ctx.status,
      ms: Math.round(ms * 10) / 10,
    },
    'request',
  );
}
