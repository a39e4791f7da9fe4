/**
 * The merchant SDK (`@svc/merchant-sdk`): a typed client of the payments API, the request
 * signature, and the webhook verifier. No dependencies beyond Node 20 (node:crypto, fetch).
 */
export { PaymentsApi, ListIterator, isRetryable } from './sdk';
export type {
  PaymentsApiOptions,
  RetryOptions,
  CallOptions,
  Page,
  Payment,
  Refund,
  Payout,
  Balance,
  Settlement,
  Event,
  WebhookDelivery,
  PhoneNumber,
  OperatorAvailability,
  SettlementTransaction,
  ListSettlementTransactionsParams,
  ExportTransactionsParams,
  CreatePaymentParams,
  CreateRefundParams,
  CreatePayoutParams,
  ListPaymentsParams,
  ListPayoutsParams,
  ListSettlementsParams,
  ListEventsParams,
} from './sdk';
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
export { ServiceClient, signRequest, type ClientOptions, type RequestOptions, type ClientResponse, type ResponseInfo } from './signing';
export { verifyWebhook, webhookSignature, standardSignature, DEFAULT_TOLERANCE_SECONDS, type VerifyResult, type VerifyOptions, type WebhookHeaders } from './webhooks';
export type { paths, components, operations } from './apiTypes';
