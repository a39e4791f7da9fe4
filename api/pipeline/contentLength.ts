import type { Middleware } from 'koa';
import { PayloadTooLarge } from '../../shared/errors';
import { GLOBAL_BODY_LIMIT } from '../body';

/**
 * Step 1 (spec 5.6.1): a declared Content-Length above 500 MB is refused with 413 before a byte
 * of the body is read (and the connection closed, so Node does not drain it). Node's HTTP parser
 * has already refused a malformed Content-Length with 400; chunked bodies without a length meet
 * the per-route limit when they are read (rawBody step).
 */
export const contentLength: Middleware = async (ctx, next) => {
  const declared = ctx.req.headers['content-length'];
  if (declared !== undefined && Number(declared) > GLOBAL_BODY_LIMIT) throw new PayloadTooLarge();
  return next();
};
