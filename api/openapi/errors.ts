import type { ErrorCode } from '../../shared/errors';
import { ERROR_STATUS } from '../middleware/errors';

/**
 * Every error code a merchant may be answered, with when (docs/decisions.md#errors); the
 * status is ERROR_STATUS's. The operator API's own codes are not here.
 */
const WHEN = {
  'invalid-json': 'the body is not valid JSON',
  'invalid-body': 'the body could not be read',
  'validation-failed': 'a field or query parameter breaks its rule (`param` names it)',
  'operator-mismatch': 'a live MSISDN prefix does not belong to the operator',
  'idempotency-key-required': 'Idempotency-Key missing where required',
  'idempotency-key-invalid': 'Idempotency-Key is not a UUID v4',
  'auth-required': 'no Bearer token',
  'api-key-invalid': 'unknown or revoked API key',
  'timestamp-expired': 'X-Timestamp missing or more than 5 minutes away (signed methods)',
  'signature-invalid': 'X-Signature does not match (signed methods)',
  'ip-not-allowed': "the source IP is not in the key's allowlist",
  'merchant-suspended': 'the merchant is suspended',
  'insufficient-scope': "the key's scope does not allow the route",
  'not-found': 'unknown route, or an object of another merchant or environment',
  'idempotency-conflict': 'the same Idempotency-Key with a different body',
  'idempotency-in-progress':
    'the same Idempotency-Key is still being processed (Retry-After: 1); retry with the same key',
  'reference-conflict': 'the reference is already used by this merchant in this environment',
  'request-replayed':
    'a signed POST sent again (same X-Signature) with no Idempotency-Key, or another key than its first use',
  'payload-too-large': 'Content-Length above 500 MB, or a body above its route limit (100 KB for a payment)',
  'unsupported-media-type': 'a body that is not `application/json` in UTF-8',
  'refund-exceeds-refundable': 'refund amount above amount_charged minus already refunded',
  'payment-not-refundable': 'the payment is not `succeeded`',
  'card-refund-not-supported': 'refund of a card payment',
  'amount-over-limit': "amount_charged above the merchant's per-transaction limit",
  'insufficient-balance': 'refund or payout above balance.available',
  'operator-unavailable': "the operator's direction is closed, or no live connector serves it",
  'amount-not-supported': 'the connector serving the operator cannot carry this amount (decimals, or its min/max)',
  'partial-refund-not-supported': 'a partial refund of a payment whose connector refunds only in full',
  'method-unavailable': 'a live card payment with no card connector routed (`GET /v1/availability` shows cards closed)',
  'link-inactive':
    'the payment link is deactivated, expired or used up (a single-use link once a payment through it succeeded)',
  'rate-limit-exceeded': 'more than 100 requests in the minute for the key (Retry-After)',
  'redelivery-limit': 'an event redelivered 10 times already',
  maintenance: 'maintenance flag on (Retry-After)',
  'service-unavailable': 'Postgres or Redis unreachable (Retry-After: 5)',
  'internal-error': 'a fault of the service (never expected: report it with the request id)',
  'bad-request': 'a request target that is not a valid URL',
} satisfies Partial<Record<ErrorCode, string>>;

export type MerchantErrorCode = keyof typeof WHEN;

export const ERROR_CODES: Record<MerchantErrorCode, { status: number; when: string }> = Object.fromEntries(
  Object.entries(WHEN).map(([code, when]) => [code, { status: ERROR_STATUS[code as MerchantErrorCode], when }]),
) as Record<MerchantErrorCode, { status: number; when: string }>;

/** What any authenticated merchant request may be answered, whatever its route (docs/decisions.md#merchant-pipeline). */
export const PIPELINE_ERRORS = [
  'auth-required',
  'api-key-invalid',
  'ip-not-allowed',
  'merchant-suspended',
  'rate-limit-exceeded',
  'not-found',
  'maintenance',
  'service-unavailable',
] as const satisfies readonly MerchantErrorCode[];

/**
 * What a route that takes no key may be answered: the overload guard and the maintenance flag
 * come before every /v1 route (api/app.ts).
 */
export const PUBLIC_ERRORS = ['maintenance', 'service-unavailable'] as const satisfies readonly MerchantErrorCode[];

/** What a signed request (POST, PUT, PATCH, DELETE) may be answered besides (pipeline steps 7-8 and the body: docs/decisions.md#merchant-pipeline). */
export const SIGNED_ERRORS = [
  'timestamp-expired',
  'signature-invalid',
  'insufficient-scope',
  'payload-too-large',
  'invalid-body',
  'unsupported-media-type',
  'invalid-json',
  'validation-failed',
] as const satisfies readonly MerchantErrorCode[];

/** A POST taking an Idempotency-Key (docs/decisions.md#merchant-pipeline). */
export const IDEMPOTENCY_ERRORS = [
  'idempotency-key-required',
  'idempotency-key-invalid',
  'idempotency-conflict',
  'idempotency-in-progress',
] as const satisfies readonly MerchantErrorCode[];
