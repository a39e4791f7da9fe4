import type { Context, Middleware } from 'koa';
import { BadRequest, DomainError, NotFound, Unavailable, type ErrorCode } from '../../shared/errors';
import { lingerAfterAnswer } from '../lingeringClose';

/** `codes`, each answered with `status`. */
const answered = <C extends ErrorCode>(status: number, codes: C[]) =>
  Object.fromEntries(codes.map((c) => [c, status])) as Record<C, number>;

/**
 * The HTTP status of every error code: the one place statuses are known (docs/decisions.md#errors). The type makes a code without a status a compile error.
 */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  ...answered(400, [
    'invalid-json',
    'validation-failed',
    'operator-mismatch',
    'idempotency-key-required',
    'idempotency-key-invalid',
    'bad-request',
    'invalid-body',
  ]),
  ...answered(401, ['auth-required', 'api-key-invalid', 'timestamp-expired', 'signature-invalid']),
  ...answered(403, ['insufficient-scope', 'ip-not-allowed', 'merchant-suspended', 'origin-not-allowed']),
  ...answered(404, ['not-found']),
  ...answered(405, ['method-not-allowed']),
  ...answered(409, [
    'idempotency-conflict',
    'idempotency-in-progress',
    'reference-conflict',
    'request-replayed',
    'webhook-exists',
    'webhook-disabled',
    'delivery-not-dead',
    'credential-revoked',
    'payment-not-pending',
    'payment-in-progress',
  ]),
  ...answered(413, ['payload-too-large']),
  ...answered(415, ['unsupported-media-type']),
  ...answered(422, [
    'refund-exceeds-refundable',
    'payment-not-refundable',
    'card-refund-not-supported',
    'amount-over-limit',
    'insufficient-balance',
    'operator-unavailable',
    'amount-not-supported',
    'partial-refund-not-supported',
    'method-unavailable',
  ]),
  ...answered(410, ['link-inactive']),
  ...answered(429, ['rate-limit-exceeded', 'redelivery-limit']),
  ...answered(500, ['internal-error']),
  ...answered(503, ['maintenance', 'service-unavailable']),
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
  // otherwise Node would drain (read and discard) the rest of a refused body, up to 500 MB; the
  // connection closes after a bounded lingering read instead (sendError, api/lingeringClose.ts)
  if (err.code === 'payload-too-large') headers.Connection = 'close';
  return {
    status: ERROR_STATUS[err.code],
    headers,
    code: err.code,
    message: err.message,
    ...(err.param ? { param: err.param } : {}),
  };
}

export function errorBody(ctx: Context, code: ErrorCode, message: string, param?: string) {
  return { error: { code, message, ...(param ? { param } : {}), request_id: ctx.state.requestId } };
}

export function sendError(ctx: Context, err: DomainError | HttpError): void {
  const e = err instanceof DomainError ? httpError(err) : err;
  // a body refused unread: the client may still be writing it, so the answer must reach it first
  if (e.code === 'payload-too-large') lingerAfterAnswer(ctx.req);
  ctx.status = e.status;
  ctx.set(e.headers);
  ctx.body = errorBody(ctx, e.code, e.message, e.param);
}

/** Codes of Postgres refusing or losing the connection: class 08, shutdowns, too many connections. */
const PG_FAULT_CODES = /^(08...|57P0[1-3]|53300|25006)$/;
// pg and knex's pool when Postgres is gone (`timeout expired`: a connection not open within connectionTimeoutMillis);
// PgBouncer while it cannot reach Postgres (a failover under way); a leader just demoted (read-only, 25006)
const PG_FAULT_MESSAGES =
  /Connection terminated|terminating connection|is not queryable|Timeout acquiring a connection|^timeout expired$|the database system is (starting up|shutting down|in recovery mode)|server login has been failing|server conn crashed|cannot execute \w+ in a read-only transaction/i;
/**
 * Socket errors: a failed connect names its port (DATABASE_URL's tells Postgres); a dropped
 * connection (read/write ECONNRESET, EPIPE) comes only from pg (ioredis says "Connection is closed").
 */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

function postgresPort(databaseUrl: string): number {
  try {
    return Number(new URL(databaseUrl).port) || 5432;
  } catch {
    return 5432;
  }
}

/** Postgres unreachable, restarting, or the connection cut (docs/decisions.md#backends-down). */
export function isPostgresDown(err: unknown, databaseUrl: string): boolean {
  const e = err as { code?: unknown; message?: unknown; port?: unknown; errors?: unknown };
  if (typeof e?.code === 'string' && PG_FAULT_CODES.test(e.code) && 'severity' in (e as object)) return true;
  if (typeof e?.message === 'string' && PG_FAULT_MESSAGES.test(e.message)) return true;
  if (typeof e?.code === 'string' && SOCKET_CODES.has(e.code)) {
    if (e.port === postgresPort(databaseUrl)) return true;
    const syscall = (err as { syscall?: unknown }).syscall;
    if (syscall === 'read' || syscall === 'write') return true;
    // a connection to a host with several addresses fails with an AggregateError of each attempt
    if (Array.isArray(e.errors))
      return e.errors.some((x) => (x as { port?: unknown }).port === postgresPort(databaseUrl));
  }
  return false;
}

function isRedisDown(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return /Stream isn't writeable|Connection is closed|ECONNREFUSED|enableOfflineQueue|max retries per request/i.test(
    msg,
  );
}

/** Postgres or Redis failed under the request: answered 503, and nothing more is asked of them for it. */
export function isBackendFault(err: unknown, databaseUrl: string): boolean {
  return !(err instanceof DomainError) && (isPostgresDown(err, databaseUrl) || isRedisDown(err));
}

/** Postgres or Redis not answering: 503, retry in 5 s. */
export const unavailable = () => new Unavailable('service-unavailable', 'The service is temporarily unavailable', 5);

/** What a thrown error is answered with (an exposed client error of Koa as a 400/404, else 500), and what to log. */
export function answerOf(
  err: unknown,
  databaseUrl: string,
): { error: DomainError | HttpError; log?: 'postgres' | 'redis' | 'unhandled' } {
  if (err instanceof DomainError) return { error: err };
  const e = err as { status?: number; expose?: boolean; message?: string };
  if (isPostgresDown(err, databaseUrl)) return { error: unavailable(), log: 'postgres' };
  if (isRedisDown(err)) return { error: unavailable(), log: 'redis' };
  if (e.status && e.status < 500 && e.expose) {
    return {
      error:
        e.status === 404
          ? new NotFound(undefined, e.message ?? 'Bad request')
          : { ...httpError(new BadRequest('bad-request', e.message ?? 'Bad request')), status: e.status },
    };
  }
  return { error: INTERNAL, log: 'unhandled' };
}

/** The one place that turns thrown errors into the error body of docs/decisions.md#errors. */
export const errorHandler: Middleware = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) sendError(ctx, new NotFound(undefined, 'No such route'));
  } catch (err) {
    const { error, log } = answerOf(err, ctx.services.config.databaseUrl);
    if (log === 'postgres')
      ctx.state.log.error(
        { err: { message: (err as Error).message, code: (err as { code?: unknown }).code } },
        'postgres unavailable',
      );
    if (log === 'redis') ctx.state.log.error({ err: { message: (err as Error).message } }, 'redis unavailable');
    if (log === 'unhandled') ctx.state.log.error({ err }, 'unhandled error');
    sendError(ctx, error);
  }
};
