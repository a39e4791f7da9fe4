/**
 * The merchant SDK (`@svc/merchant-sdk`): a typed client of the payments API, the request
 * signature, and the webhook verifier. No dependencies beyond Node 20 (node:crypto, fetch).
 */
// every export of sdk.ts and signing.ts is the SDK's public API
export * from './sdk';
export {
  PaymentsApiError,
  InvalidRequestError,
  AuthenticationError,
  PermissionError,
  NotFoundError,
  ConflictError,
  InvalidBodyError,
  UnprocessableError,
  RateLimitError,
  ServiceUnavailableError,
  ConnectionError,
  errorFromResponse,
  type ErrorCode,
} from './errors';
export * from './signing';
export {
  verifyWebhook,
  webhookSignature,
  standardSignature,
  DEFAULT_TOLERANCE_SECONDS,
  type VerifyResult,
  type VerifyOptions,
  type WebhookHeaders,
} from './webhooks';
export type { paths, components, operations } from './apiTypes';
