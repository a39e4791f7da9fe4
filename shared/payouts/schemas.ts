import type { Currency } from '../domain/ledger';
import type { Operator } from '../domain/msisdn';
import { payoutMachine } from '../operations/machines';
import { createPaymentSchema } from '../payments/schemas';
import { CURSOR_QUERY, LIMIT_QUERY } from '../db/pagination';
import type { MetadataValue, PayoutStatus } from '../vocabulary';

/**
 * Request schemas of the payout routes (decisions.md); reference and metadata follow the same
 * rules as a payment's. Cross-field rules that need the environment or the merchant (operator
 * prefix, fee) are checked by create.ts.
 */

export interface PayoutInput {
  amount: number;
  currency: Currency;
  /** mobile_money, the only payout method; may be left out */
  method?: 'mobile_money';
  operator: Operator;
  phone: string;
  reference: string;
  description?: string;
  metadata?: Record<string, MetadataValue>;
}

const paymentFields = createPaymentSchema.properties;

export const createPayoutSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'currency', 'operator', 'phone', 'reference'],
  properties: {
    amount: paymentFields.amount,
    currency: paymentFields.currency,
    method: { type: 'string', enum: ['mobile_money'] },
    operator: paymentFields.operator,
    phone: paymentFields.phone,
    reference: paymentFields.reference,
    description: paymentFields.description,
    metadata: paymentFields.metadata,
  },
} as const;

export interface ListPayoutsQuery {
  reference?: string;
  status?: PayoutStatus;
  limit?: string;
  cursor?: string;
}

/** Query strings arrive as text: limit and cursor are checked for range by the pagination helpers. */
export const listPayoutsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    reference: paymentFields.reference,
    status: { type: 'string', enum: payoutMachine.statuses },
    limit: LIMIT_QUERY,
    cursor: CURSOR_QUERY,
  },
} as const;
