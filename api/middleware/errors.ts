import type { Context, Middleware } from 'koa';
import { BadRequest, DomainError, NotFound, Unavailable, type ErrorCode } from '../../shared/errors';

/** The HTTP status of every error code: the one place statuses are known (decisions.md "Errors", spec 7). */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  'invalid-json': 400,
  'validation-failed': 400,
  'operator-mismatch': 400,
  'idempotency-key-required': 400,
  'idempotency-key-invalid': 400,
  'bad-request': 400,
  'invalid-body': 400,
  'auth-required': 401,
  'api-key-invalid': 401,
  'timestamp-expired': 401,
  'signature-invalid': 401,
  'insufficient-scope': 403,
  'ip-not-allowed': 403,
  'merchant-suspended': 403,
  'origin-not-allowed': 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'idempotency-conflict': 409,
  'idempotency-in-progress': 409,
  'reference-conflict': 409,
  'request-replayed': 409,
  'webhook-exists': 409,
  'webhook-disabled': 409,
  'delivery-not-dead': 409,
  'credential-revoked': 409,
  'payment-not-pending': 409,
  'payment-in-progress': 409,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'refund-exceeds-refundable': 422,
  'payment-not-refundable': 422,
  'card-refund-not-supported': 422,
  'amount-over-limit': 422,
  'insufficient-balance': 422,
  'operator-unavailable': 422,
  'rate-limit-exceeded': 429,
  'redelivery-limit': 429,
  'internal-error': 500,
  maintenance: 503,
  'service-unavailable': 503,
};

/** An error as it is answered. */
export interface HttpError {
  status: number;
  headers: Record<string, string>;
  code: ErrorCode;
  message: string;
  param?: string;
}

/** An error the service did not expect: 500, nothing said about it. */
const INTERNAL: HttpError = { status: 500, headers: {}, code: 'internal-error', message: 'An internal error occurred' };

/** Status and headers of a domain error. */
export function httpError(err: DomainError): HttpError {
  const headers: Record<string, string> = {};
  if (err.retryAfter !== undefined) headers['Retry-After'] = String(err.retryAfter);
  if ('challenge' in err && typeof err.challenge === 'string') headers['WWW-Authenticate'] = err.challenge;
  if ('allow' in err && typeof err.allow === 'string') headers.Allow = err.allow;
  // otherwise Node would drain (read and discard) the rest of a refused body, up to 500 MB
  if (err.code === 'payload-too-large') headers.Connection = 'close';
  return { status: ERROR_STATUS[err.code], headers, code: err.code, message: err.message, ...(err.param ? { param: err.param } : {}) };
}

export function errorBody(ctx: Context, code: ErrorCode, message: string, param?: string) {
  return { error: { code, message, ...(param ? { param } : {}), request_id: ctx.state.requestId } };
}

export function sendError(ctx: Context, err: DomainError | HttpError): void {
  const e = err instanceof DomainError ? httpError(err) : err;
  ctx.status = e.status;
  ctx.set(e.headers);
  ctx.body = errorBody(ctx, e.code, e.message, e.param);
}

/** Codes of Postgres refusing or losing the connection: class 08, shutdowns, too many connections. */
const PG_FAULT_CODES = /^(08...|57P0[1-3]|53300)$/;
/** Errors of the pg driver and knex's pool when Postgres is gone or cannot be reached. */
// `timeout expired`: pg's own word for a connection that did not open within connectionTimeoutMillis (shared/db/knex.ts)
const PG_FAULT_MESSAGES = /Connection terminated|terminating connection|is not queryable|Timeout acquiring a connection|^timeout expired$|the database system is (starting up|shutting down|in recovery mode)/i;
/**
 * Socket errors. A failed connect names its port (the Postgres port of DATABASE_URL tells it);
 * an established connection dropped under a query (read/write ECONNRESET, EPIPE) reaches a
 * request only from pg: ioredis answers its commands in flight "Connection is closed" instead.
 */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

function postgresPort(databaseUrl: string): number {
  try {
    return Number(new URL(databaseUrl).port) || 5432;
  } catch {
    return 5432;
  }
}

/** Postgres unreachable, restarting, or the connection cut (decisions.md "Backends down"). */
export function isPostgresDown(err: unknown, databaseUrl: string): boolean {
  const e = err as { code?: unknown; message?: unknown; port?: unknown; errors?: unknown };
  if (typeof e?.code === 'string' && PG_FAULT_CODES.test(e.code) && 'severity' in (e as object)) return true;
  if (typeof e?.message === 'string' && PG_FAULT_MESSAGES.test(e.message)) return true;
  if (typeof e?.code === 'string' && SOCKET_CODES.has(e.code)) {
    if (e.port === postgresPort(databaseUrl)) return true;
    const syscall = (err as { syscall?: unknown }).syscall;
    if (syscall === 'read' || syscall === 'write') return true;
    // a connection to a host with several addresses fails with an AggregateError of each attempt
    if (Array.isArray(e.errors)) return e.errors.some((x) => (x as { port?: unknown }).port === postgresPort(databaseUrl));
  }
  return false;
}

function isRedisDown(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return /Stream isn't writeable|Connection is closed|ECONNREFUSED|enableOfflineQueue|max retries per request/i.test(msg);
}

/** Postgres or Redis failed under the request: answered 503, and nothing more is asked of them for it. */
export function isBackendFault(err: unknown, databaseUrl: string): boolean {
  return !(err instanceof DomainError) && (isPostgresDown(err, databaseUrl) || isRedisDown(err));
}

/** Postgres or Redis not answering: 503, retry in 5 s. */
export const unavailable = () => new Unavailable('service-unavailable', 'The service is temporarily unavailable', 5);

/**
 * What a thrown error is answered with: a domain error by its code; a backend fault 503; an
 * error Koa or a library raised for the client (status < 500, exposed) as a 400/404; anything
 * else 500. `log` says which of the last ones to log.
 */
export function answerOf(err: unknown, databaseUrl: string): { error: DomainError | HttpError; log?: 'postgres' | 'redis' | 'unhandled' } {
  if (err instanceof DomainError) return { error: err };
  const e = err as { status?: number; expose?: boolean; message?: string };
  if (isPostgresDown(err, databaseUrl)) return { error: unavailable(), log: 'postgres' };
  if (isRedisDown(err)) return { error: unavailable(), log: 'redis' };
  if (e.status && e.status < 500 && e.expose) {
    return { error: e.status === 404 ? new NotFound(undefined, e.message ?? 'Bad request') : { ...httpError(new BadRequest('bad-request', e.message ?? 'Bad request')), status: e.status } };
  }
  return { error: INTERNAL, log: 'unhandled' };
}

/** The one place that turns thrown errors into the error body of decisions.md. */
export const errorHandler: Middleware = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) sendError(ctx, new NotFound(undefined, 'No such route'));
  } catch (err) {
    const { error, log } = answerOf(err, ctx.services.config.databaseUrl);
    if (log === 'postgres') ctx.state.log.error({ err: { message: (err as Error).message, code: (err as { code?: unknown }).code } }, 'postgres unavailable');
    if (log === 'redis') ctx.state.log.error({ err: { message: (err as Error).message } }, 'redis unavailable');
    if (log === 'unhandled') ctx.state.log.error({ err }, 'unhandled error');
    sendError(ctx, error);
  }
};
