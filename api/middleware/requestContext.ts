import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * X-Request-Id: the caller's when it is a sane token, else a new one; echoed on every response
 * and bound to the request's logger (and from there into the jobs it enqueues). One access log
 * line per request: method, path, status, time; never headers or bodies.
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
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    ctx.state.log.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
  }
};
