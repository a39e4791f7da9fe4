import { MONEY } from '../../../shared/validation';
import { MAX_AMOUNT } from '../../../shared/money';

const FEE_RULE = {
  type: 'object',
  additionalProperties: false,
  required: ['percent_bps', 'fixed'],
  properties: {
    percent_bps: { type: 'integer', minimum: 0, maximum: 10000 },
    fixed: { type: 'integer', minimum: 0, maximum: MAX_AMOUNT },
  },
} as const;

/** A per-transaction limit: 1 to 10^12 minor units, or null (no limit of the merchant's own; amounts stay at most 10^12). */
const LIMIT = { anyOf: [MONEY, { type: 'null' }] } as const;

const MERCHANT_FIELDS = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  fee_bearer: { type: 'string', enum: ['merchant', 'customer'] },
  fees: { type: 'object', additionalProperties: false, properties: { USD: FEE_RULE, CDF: FEE_RULE } },
  per_tx_limit_usd: LIMIT,
  per_tx_limit_cdf: LIMIT,
} as const;

export const createMerchantSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: MERCHANT_FIELDS,
} as const;

export const updateMerchantSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...MERCHANT_FIELDS, status: { type: 'string', enum: ['active', 'suspended'] } },
} as const;

export const issueCredentialSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['environment', 'scope'],
  properties: {
    environment: { type: 'string', enum: ['test', 'live'] },
    scope: { type: 'string', enum: ['read', 'payments', 'full'] },
    ip_allowlist: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 64 } },
  },
} as const;

export const revokeCredentialSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { immediate: { type: 'boolean' } },
} as const;

export const maintenanceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['enabled'],
  properties: {
    enabled: { type: 'boolean' },
    retry_after: { type: 'integer', minimum: 1, maximum: 86400 },
  },
} as const;

export const rotateWebhookSecretSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['environment'],
  properties: {
    environment: { type: 'string', enum: ['test', 'live'] },
    // how long the replaced secret keeps signing beside the new one; at most 30 days
    overlap_seconds: { type: 'integer', minimum: 0, maximum: 2_592_000 },
  },
} as const;

const DIRECTION_STATE = { type: 'string', enum: ['closed', 'operational'] } as const;

export const operatorClosuresSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { collection: DIRECTION_STATE, payout: DIRECTION_STATE, refund: DIRECTION_STATE },
} as const;
