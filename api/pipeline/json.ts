import type { Middleware } from 'koa';
import { BadRequest, UnsupportedMediaType } from '../../shared/errors';
import { parseJson, requireJsonContentType } from '../body';
import { idempotencyOf, JSON_METHODS } from './request';

/**
 * Content type and JSON, only after the signature has been checked: POST/PATCH/PUT requests must
 * be `application/json` in UTF-8 and not content-encoded (415 unsupported-media-type), even with
 * an empty body (spec: a POST without application/json is 415; an empty refund request must not
 * refund the whole payment by accident), and valid JSON (400 invalid-json); the value goes to
 * ctx.state.body. A POST that moves money (payments, refunds, payouts: the routes that take an
 * Idempotency-Key) needs a JSON object: an empty body is 400 invalid-json whatever its
 * Content-Type (decisions.md "Empty bodies"; a full refund is asked with `{}`). On the routes
 * that take no fields, an empty body declared `application/json` reads as `{}`.
 */
export const json: Middleware = async (ctx, next) => {
  if (!JSON_METHODS.has(ctx.method)) return next();
  const raw = ctx.state.rawBody ?? Buffer.alloc(0);
  if (raw.length === 0 && idempotencyOf(ctx.method, ctx.path)) throw new BadRequest('invalid-json', 'The body must be a JSON object; a full refund is asked with {}');
  requireJsonContentType(ctx);
  if (raw.length === 0) {
    ctx.state.body = {};
    return next();
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new UnsupportedMediaType('The body must be JSON in UTF-8');
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') throw new UnsupportedMediaType('Content-Encoding is not supported');
  ctx.state.body = parseJson(raw);
  return next();
};
