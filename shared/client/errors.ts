import type { components } from './apiTypes';

/**
 * Typed errors of the merchant SDK: every non-2xx answer becomes a PaymentsApiError (a subclass per
 * status) with the body's error code, the field at fault and the request id to quote to support.
 */

/** Every code the API documents (shared/client/openapi.json, components.schemas.Error). */
export type ErrorCode = components['schemas']['Error']['error']['code'];

export interface ErrorDetails {
  status: number;
  code: ErrorCode | (string & {});
  message: string;
  param?: string;
  requestId: string | null;
  /** Seconds from Retry-After, when the answer had one. */
  retryAfter: number | null;
  headers: Headers;
  body: unknown;
}

/** The details as read-only fields (`message` is the Error's own, built from them). */
export interface PaymentsApiError extends Readonly<Omit<ErrorDetails, 'message'>> {}
export class PaymentsApiError extends Error {
  constructor(d: ErrorDetails) {
    super(
      `${d.status} ${d.code}: ${d.message}${d.param ? ` (param ${d.param})` : ''}${d.requestId ? ` [request ${d.requestId}]` : ''}`,
    );
    const { message: _message, ...fields } = d;
    Object.assign(this, fields);
    this.name = new.target.name;
  }
}

/** 400: a field or the body is wrong (`param` names the field). */
export class InvalidRequestError extends PaymentsApiError {}
/** 401: key missing or unknown, timestamp or signature refused. */
export class AuthenticationError extends PaymentsApiError {}
/** 403: IP not allowed, merchant suspended, or the key's scope does not allow it. */
export class PermissionError extends PaymentsApiError {}
/** 404: no such object for this key's merchant and environment. */
export class NotFoundError extends PaymentsApiError {}
/** 409: reference or idempotency conflict, request replayed. */
export class ConflictError extends PaymentsApiError {}
/** 413 / 415: the body is too large or not JSON. */
export class InvalidBodyError extends PaymentsApiError {}
/** 422: refused by a business rule (balance, limit, refundable amount, operator closed). */
export class UnprocessableError extends PaymentsApiError {}
/** 429: rate limit or redelivery limit (`retryAfter` when the limit lifts). */
export class RateLimitError extends PaymentsApiError {}
/** 5xx: maintenance, a backend down, or a fault of the service. */
export class ServiceUnavailableError extends PaymentsApiError {}

/** No answer: connection refused or reset, DNS, timeout. */
export class ConnectionError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'ConnectionError';
  }
}

const BY_STATUS: Record<number, typeof PaymentsApiError> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  403: PermissionError,
  404: NotFoundError,
  409: ConflictError,
  413: InvalidBodyError,
  415: InvalidBodyError,
  422: UnprocessableError,
  429: RateLimitError,
};

/** Retry-After in seconds (delta-seconds or an HTTP date), or null. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The typed error of a non-2xx answer. */
export function errorFromResponse(res: {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}): PaymentsApiError {
  const e = (
    res.body as { error?: { code?: string; message?: string; param?: string; request_id?: string } } | undefined
  )?.error;
  const Class = BY_STATUS[res.status] ?? (res.status >= 500 ? ServiceUnavailableError : PaymentsApiError);
  return new Class({
    status: res.status,
    code: e?.code ?? `http-${res.status}`,
    message: e?.message ?? (res.text.slice(0, 200) || `HTTP ${res.status}`),
    param: e?.param,
    requestId: e?.request_id ?? res.headers.get('x-request-id'),
    retryAfter: retryAfterSeconds(res.headers.get('retry-after')),
    headers: res.headers,
    body: res.body,
  });
}
