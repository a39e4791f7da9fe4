import { MONEY } from '../validation';
import { CURSOR_QUERY, LIMIT_QUERY } from '../db/pagination';
import { MSISDN_PATTERN, OPERATORS, type Operator } from '../msisdn';
import { paymentMachine } from '../operations/kindMachines';
import type { Currency } from '../rules/ledger';
import type { FeeBearer } from '../rules/fees';
import type { MetadataValue, PaymentStatus } from '../vocabulary';

/**
 * Request schemas of the payment routes (docs/decisions.md#payments); also the source of the API
 * description. Cross-field rules that need the merchant or the environment (operator prefix,
 * fees, limits) are checked by shared/payments/create.ts.
 */

export interface CreatePaymentInput {
  amount: number;
  currency: Currency;
  method: 'mobile_money' | 'card';
  operator?: Operator;
  phone?: string;
  reference: string;
  description?: string;
  metadata?: Record<string, MetadataValue>;
  customer_email?: string;
  customer_name?: string;
  return_url?: string;
  fee_bearer?: FeeBearer;
}

export const METADATA_MAX_KEYS = 20;
export const METADATA_MAX_VALUE_LENGTH = 500;
/** docs/decisions.md#metadata-keys: metadata keys are 1 to 40 characters. */
export const METADATA_MAX_KEY_LENGTH = 40;

const OPERATOR = { type: 'string', enum: OPERATORS } as const;
const PHONE = { type: 'string', pattern: MSISDN_PATTERN } as const;
const CUSTOMER_EMAIL = { type: 'string', format: 'email', maxLength: 254 } as const;
const CUSTOMER_NAME = { type: 'string', minLength: 1, maxLength: 200 } as const;
const RETURN_URL = { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 } as const;

export const createPaymentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'currency', 'method', 'reference'],
  properties: {
    amount: MONEY,
    currency: { type: 'string', enum: ['USD', 'CDF'] },
    method: { type: 'string', enum: ['mobile_money', 'card'] },
    operator: OPERATOR,
    phone: PHONE,
    reference: { type: 'string', minLength: 1, maxLength: 255 },
    description: { type: 'string', maxLength: 1000 },
    // string-able values only; a number or boolean is always far below 500 characters once stringified
    metadata: {
      type: 'object',
      maxProperties: METADATA_MAX_KEYS,
      propertyNames: { minLength: 1, maxLength: METADATA_MAX_KEY_LENGTH },
      additionalProperties: {
        anyOf: [{ type: 'string', maxLength: METADATA_MAX_VALUE_LENGTH }, { type: 'number' }, { type: 'boolean' }],
      },
    },
    customer_email: CUSTOMER_EMAIL,
    customer_name: CUSTOMER_NAME,
    return_url: RETURN_URL,
    fee_bearer: { type: 'string', enum: ['merchant', 'customer'] },
  },
  allOf: [
    {
      if: { type: 'object', required: ['method'], properties: { method: { const: 'mobile_money' } } },
      then: { type: 'object', required: ['operator', 'phone'], properties: { operator: OPERATOR, phone: PHONE } },
    },
    {
      if: { type: 'object', required: ['method'], properties: { method: { const: 'card' } } },
      then: {
        type: 'object',
        required: ['customer_email', 'customer_name', 'return_url'],
        properties: { customer_email: CUSTOMER_EMAIL, customer_name: CUSTOMER_NAME, return_url: RETURN_URL },
      },
    },
  ],
} as const;

export interface ListPaymentsQuery {
  reference?: string;
  status?: PaymentStatus;
  payment_link?: string;
  limit?: string;
  cursor?: string;
}

/** Query strings arrive as text: limit and cursor are checked for shape here, for range in query.ts. */
export const listPaymentsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    reference: { type: 'string', minLength: 1, maxLength: 255 },
    status: { type: 'string', enum: paymentMachine.statuses },
    payment_link: {
      type: 'string',
      pattern: '^plink_[0-9a-f-]{36}$',
      description: 'Only the payments made through this payment link',
    },
    limit: LIMIT_QUERY,
    cursor: CURSOR_QUERY,
  },
} as const;
