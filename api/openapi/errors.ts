/**
 * Every error code a merchant route may answer, with its status and when (spec section 7 and
 * decisions.md Errors). The OpenAPI document lists, for each operation, the codes of the
 * pipeline plus those its route declares (RouteSpec.errors), grouped by status; the contract
 * check refuses an error code an operation does not document.
 */
export const ERROR_CODES: Record<string, { status: number; when: string }> = {
  'invalid-json': { status: 400, when: 'the body is not valid JSON' },
  'invalid-body': { status: 400, when: 'the body could not be read' },
  'validation-failed': { status: 400, when: 'a field or query parameter breaks its rule (`param` names it)' },
  'operator-mismatch': { status: 400, when: 'a live MSISDN prefix does not belong to the operator' },
  'idempotency-key-required': { status: 400, when: 'Idempotency-Key missing where required' },
  'idempotency-key-invalid': { status: 400, when: 'Idempotency-Key is not a UUID v4' },
  'auth-required': { status: 401, when: 'no Bearer token' },
  'api-key-invalid': { status: 401, when: 'unknown or revoked API key' },
  'timestamp-expired': { status: 401, when: 'X-Timestamp missing or more than 5 minutes away (signed methods)' },
  'signature-invalid': { status: 401, when: 'X-Signature does not match (signed methods)' },
  'ip-not-allowed': { status: 403, when: "the source IP is not in the key's allowlist" },
  'merchant-suspended': { status: 403, when: 'the merchant is suspended' },
  'insufficient-scope': { status: 403, when: "the key's scope does not allow the route" },
  'not-found': { status: 404, when: 'unknown route, or an object of another merchant or environment' },
  'idempotency-conflict': { status: 409, when: 'the same Idempotency-Key with a different body' },
  'idempotency-in-progress': { status: 409, when: 'the same Idempotency-Key is still being processed (Retry-After: 1); retry with the same key' },
  'reference-conflict': { status: 409, when: 'the reference is already used by this merchant in this environment' },
  'request-replayed': { status: 409, when: 'a signed POST without Idempotency-Key sent again' },
  'payload-too-large': { status: 413, when: 'Content-Length above 500 MB, or a body above its route limit (100 KB for a payment)' },
  'unsupported-media-type': { status: 415, when: 'a body that is not `application/json` in UTF-8' },
  'refund-exceeds-refundable': { status: 422, when: 'refund amount above amount_charged minus already refunded' },
  'payment-not-refundable': { status: 422, when: 'the payment is not `succeeded`' },
  'card-refund-not-supported': { status: 422, when: 'refund of a card payment' },
  'amount-over-limit': { status: 422, when: "amount_charged above the merchant's per-transaction limit" },
  'insufficient-balance': { status: 422, when: 'refund or payout above balance.available' },
  'operator-unavailable': { status: 422, when: "the operator's direction is closed" },
  'rate-limit-exceeded': { status: 429, when: 'more than 100 requests in the minute for the key (Retry-After)' },
  'redelivery-limit': { status: 429, when: 'an event redelivered 10 times already' },
  maintenance: { status: 503, when: 'maintenance flag on (Retry-After)' },
  'service-unavailable': { status: 503, when: 'Postgres or Redis unreachable (Retry-After: 5)' },
  'internal-error': { status: 500, when: 'a fault of the service (never expected: report it with the request id)' },
};

/** What any authenticated merchant request may be answered, whatever its route (spec 5.6). */
export const PIPELINE_ERRORS = [
  'auth-required',
  'api-key-invalid',
  'ip-not-allowed',
  'merchant-suspended',
  'rate-limit-exceeded',
  'not-found',
  'maintenance',
  'service-unavailable',
] as const;

/** What a signed request (POST, PUT, PATCH, DELETE) may be answered besides (spec 5.6 steps 7-8, body steps). */
export const SIGNED_ERRORS = [
  'timestamp-expired',
  'signature-invalid',
  'insufficient-scope',
  'payload-too-large',
  'invalid-body',
  'unsupported-media-type',
  'invalid-json',
  'validation-failed',
] as const;

/** GET routes with a query schema, or a path id, may be refused a parameter. */
export const QUERY_ERRORS = ['validation-failed'] as const;

/** A POST taking an Idempotency-Key (spec 5.4, decisions.md Faults). */
export const IDEMPOTENCY_ERRORS = ['idempotency-key-required', 'idempotency-key-invalid', 'idempotency-conflict', 'idempotency-in-progress'] as const;
