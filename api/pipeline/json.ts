import type { Middleware } from 'koa';
import { UnsupportedMediaType } from '../../shared/errors';
import { parseJson, requireJsonContentType } from '../body';
import { JSON_METHODS } from './request';

const unsupported = (message: string) => new UnsupportedMediaType(message);

/**
 * Content type and JSON, only after the signature has been checked: POST/PATCH/PUT requests must
 * be `application/json` in UTF-8 and not content-encoded (415 unsupported-media-type), even with
 * an empty body (spec: a POST without application/json is 415; an empty refund request must not
 * refund the whole payment by accident), and valid JSON (400 invalid-json); the value goes to
 * ctx.state.body. An empty body declared `application/json` reads as `{}` (a full refund may
 * send nothing).
 */
export const json: Middleware = async (ctx, next) => {
  if (!JSON_METHODS.has(ctx.method)) return next();
  const raw = ctx.state.rawBody ?? Buffer.alloc(0);
  requireJsonContentType(ctx);
  if (raw.length === 0) {
    ctx.state.body = {};
    return next();
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw unsupported('The body must be JSON in UTF-8');
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') throw unsupported('Content-Encoding is not supported');
  ctx.state.body = parseJson(raw);
  return next();
};
