/**
 * Domain errors in the vocabulary of docs/decisions.md#errors, without HTTP: api/middleware/errors.ts alone
 * maps each to its status, headers and body. Each class accepts only the codes of its kind.
 */

/** Codes of the 401 answers (docs/decisions.md#errors: one fixed message each). */
export type UnauthenticatedCode = 'auth-required' | 'api-key-invalid' | 'timestamp-expired' | 'signature-invalid';
export type BadRequestCode =
  | 'invalid-json'
  | 'operator-mismatch'
  | 'idempotency-key-required'
  | 'idempotency-key-invalid'
  // beyond the specification (docs/decisions.md#errors): a request target that is not a URL, a body that cannot be read
  | 'bad-request'
  | 'invalid-body';
export type ForbiddenCode =
  | 'insufficient-scope'
  | 'ip-not-allowed'
  | 'merchant-suspended'
  // docs/decisions.md#cards-hosted-checkout: POST /checkout/{id}/pay from a page of another origin
  | 'origin-not-allowed';
export type ConflictCode =
  | 'idempotency-conflict'
  | 'idempotency-in-progress'
  | 'reference-conflict'
  | 'request-replayed'
  // docs/decisions.md#operator-admin-api
  | 'webhook-exists'
  | 'webhook-disabled'
  | 'delivery-not-dead'
  | 'credential-revoked'
  // docs/decisions.md#cards-hosted-checkout: POST /checkout/{id}/pay once the payment left pending, or while a card is being charged
  | 'payment-not-pending'
  | 'payment-in-progress';
export type UnprocessableCode =
  | 'refund-exceeds-refundable'
  | 'payment-not-refundable'
  | 'card-refund-not-supported'
  | 'amount-over-limit'
  | 'insufficient-balance'
  | 'operator-unavailable'
  | 'amount-not-supported'
  | 'partial-refund-not-supported'
  // docs/decisions.md#errors: a live card payment with no card connector routed
  | 'method-unavailable';
/** docs/decisions.md#payment-links: a link deactivated, expired or used up. */
export type GoneCode = 'link-inactive';
export type TooManyCode = 'rate-limit-exceeded' | 'redelivery-limit';
export type UnavailableCode = 'maintenance' | 'service-unavailable';

/** Every error code the service answers with: those of the specification and of docs/decisions.md#errors. */
export type ErrorCode =
  | UnauthenticatedCode
  | BadRequestCode
  | 'validation-failed'
  | ForbiddenCode
  | 'not-found'
  | 'method-not-allowed'
  | ConflictCode
  | 'payload-too-large'
  | 'unsupported-media-type'
  | UnprocessableCode
  | GoneCode
  | TooManyCode
  | UnavailableCode
  | 'internal-error';

export abstract class DomainError<C extends ErrorCode = ErrorCode> extends Error {
  /** Seconds after which the same request may succeed (a wait, a maintenance, a limit), if known. */
  readonly retryAfter?: number;
  constructor(
    readonly code: C,
    message: string,
    /** The one request field at fault, if any. */
    readonly param?: string,
    retryAfter?: number,
  ) {
    super(message);
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/** A field breaks its rule. */
export class ValidationFailed extends DomainError<'validation-failed'> {
  constructor(param: string, message: string) {
    super('validation-failed', message, param);
  }
}

/** The request cannot be taken as it is (other than a field's rule). */
export class BadRequest extends DomainError<BadRequestCode> {}

const UNAUTHENTICATED_MESSAGES: Record<UnauthenticatedCode, string> = {
  'auth-required': 'Authentication is required',
  'api-key-invalid': 'The API key is not valid',
  'timestamp-expired': 'The request timestamp is missing or outside the allowed window',
  'signature-invalid': 'The request signature is not valid',
};

/** Who is asking is not established: one fixed message per code unless the caller names another. */
export class Unauthenticated extends DomainError<UnauthenticatedCode> {
  constructor(
    code: UnauthenticatedCode,
    message = UNAUTHENTICATED_MESSAGES[code],
    /** How the client should authenticate (a `WWW-Authenticate` challenge), if it is told. */
    readonly challenge?: string,
  ) {
    super(code, message);
  }
}

/** The caller is known but may not do this. */
export class Forbidden extends DomainError<ForbiddenCode> {}

/** No such object for this caller (another merchant's or environment's objects included), or no such route. */
export class NotFound extends DomainError<'not-found'> {
  constructor(what = 'Resource', message = `${what} not found`) {
    super('not-found', message);
  }
}

/** The path exists, not with this method. */
export class MethodNotAllowed extends DomainError<'method-not-allowed'> {
  constructor(
    message: string,
    /** The methods the path takes, comma-separated. */
    readonly allow: string,
  ) {
    super('method-not-allowed', message);
  }
}

/** The request collides with the state of something that exists (a key, a reference, a status). */
export class Conflict extends DomainError<ConflictCode> {
  constructor(code: ConflictCode, message: string, opts: { param?: string; retryAfter?: number } = {}) {
    super(code, message, opts.param, opts.retryAfter);
  }
}

/** The body is larger than its limit. */
export class PayloadTooLarge extends DomainError<'payload-too-large'> {
  constructor() {
    super('payload-too-large', 'The request body is too large');
  }
}

/** The body is not JSON in UTF-8, or comes in an encoding the service does not take. */
export class UnsupportedMediaType extends DomainError<'unsupported-media-type'> {
  constructor(message: string) {
    super('unsupported-media-type', message);
  }
}

/** Well formed, but a business rule refuses it. */
export class Unprocessable extends DomainError<UnprocessableCode> {}

/** 410: the object exists but takes no more of what was asked (a payment link no longer active). */
export class Gone extends DomainError<GoneCode> {}

/** A limit of requests is reached. */
export class TooManyRequests extends DomainError<TooManyCode> {
  constructor(code: TooManyCode, message: string, retryAfter?: number) {
    super(code, message, undefined, retryAfter);
  }
}

/** The service cannot serve now (maintenance, a backend unreachable); try again after `retryAfter` seconds. */
export class Unavailable extends DomainError<UnavailableCode> {
  constructor(code: UnavailableCode, message: string, retryAfter: number) {
    super(code, message, undefined, retryAfter);
  }
}
