import type { Context, Middleware } from 'koa';
import { ApiError } from '../../shared/errors';

export function errorBody(ctx: Context, code: string, message: string, param?: string) {
  return { error: { code, message, ...(param ? { param } : {}), request_id: ctx.state.requestId } };
}

export function sendError(ctx: Context, err: ApiError): void {
  ctx.status = err.status;
  ctx.set(err.headers);
  ctx.body = errorBody(ctx, err.code, err.message, err.param);
}

function isRedisDown(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return /Stream isn't writeable|Connection is closed|ECONNREFUSED|enableOfflineQueue|max retries per request/i.test(msg);
}

/** The one place that turns thrown errors into the error body of decisions.md. */
export const errorHandler: Middleware = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      sendError(ctx, new ApiError(404, 'not-found', 'No such route'));
    }
  } catch (err) {
    if (err instanceof ApiError) return sendError(ctx, err);
    const e = err as { status?: number; expose?: boolean; message?: string };
    if (isRedisDown(err)) {
      ctx.state.log.error({ err: { message: e.message } }, 'redis unavailable');
      return sendError(ctx, new ApiError(503, 'service-unavailable', 'The service is temporarily unavailable', undefined, { 'Retry-After': '5' }));
    }
    if (e.status && e.status < 500 && e.expose) {
      return sendError(ctx, new ApiError(e.status, e.status === 404 ? 'not-found' : 'bad-request', e.message ?? 'Bad request'));
    }
    ctx.state.log.error({ err }, 'unhandled error');
    sendError(ctx, new ApiError(500, 'internal-error', 'An internal error occurred'));
  }
};
