import type { Middleware } from 'koa';
import { BadRequest, UnsupportedMediaType } from '../../shared/errors';
import { parseJson, requireJsonContentType } from '../body';
import { idempotencyOf, JSON_METHODS } from './request';

/**
 * After the signature: POST/PATCH/PUT bodies must be `application/json` in UTF-8, not
 * content-encoded (415), even when empty, and valid JSON (400 invalid-json); the value goes to
 * ctx.state.body. A POST that moves money (the routes taking an Idempotency-Key) refuses an
 * empty body whatever its Content-Type, so an empty refund request never refunds the whole
 * payment (docs/decisions.md#empty-bodies); elsewhere an empty JSON body reads as `{}`.
 */
export const json: Middleware = async (ctx, next) => {
  if (!JSON_METHODS.has(ctx.method)) return next();
  const raw = ctx.state.rawBody ?? Buffer.alloc(0);
  if (raw.length === 0 && idempotencyOf(ctx.method, ctx.path))
    throw new BadRequest('invalid-json', 'The body must be a JSON object; a full refund is asked with {}');
  requireJsonContentType(ctx);
  if (raw.length === 0) {
    ctx.state.body = {};
    return next();
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8')
    throw new UnsupportedMediaType('The body must be JSON in UTF-8');
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') throw new UnsupportedMediaType('Content-Encoding is not supported');
  ctx.state.body = parseJson(raw);
  return next();
};
