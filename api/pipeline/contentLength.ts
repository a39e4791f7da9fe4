import type { Middleware } from 'koa';
import { PayloadTooLarge } from '../../shared/errors';
import { GLOBAL_BODY_LIMIT } from '../body';

/**
 * Step 1 of the pipeline (docs/decisions.md#merchant-pipeline): a declared Content-Length above 500 MB is 413 before a byte is read.
 * Chunked bodies meet the per-route limit when they are read (signed step).
 */
export const contentLength: Middleware = async (ctx, next) => {
  const declared = ctx.req.headers['content-length'];
  if (declared !== undefined && Number(declared) > GLOBAL_BODY_LIMIT) throw new PayloadTooLarge();
  return next();
};
