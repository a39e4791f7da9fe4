import { payoutMachine } from '../operations/kindMachines';
import { createPaymentSchema, type CreatePaymentInput, type ListPaymentsQuery } from '../payments/schemas';
import { CURSOR_QUERY, LIMIT_QUERY } from '../db/pagination';
import type { PayoutStatus } from '../vocabulary';

/**
 * Request schemas of the payout routes (docs/decisions.md#payouts), with the payment's field rules. Cross-field
 * rules that need the environment or the merchant (operator prefix, fee) are checked by create.ts.
 */

export type PayoutInput = Pick<CreatePaymentInput, 'amount' | 'currency' | 'reference' | 'description' | 'metadata'> &
  Required<Pick<CreatePaymentInput, 'operator' | 'phone'>> & {
    /** mobile_money, the only payout method; may be left out */
    method?: 'mobile_money';
  };

const { amount, currency, operator, phone, reference, description, metadata } = createPaymentSchema.properties;

export const createPayoutSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'currency', 'operator', 'phone', 'reference'],
  properties: {
    amount,
    currency,
    method: { type: 'string', enum: ['mobile_money'] },
    operator,
    phone,
    reference,
    description,
    metadata,
  },
} as const;

export type ListPayoutsQuery = Omit<ListPaymentsQuery, 'status'> & { status?: PayoutStatus };

/** Query strings arrive as text: limit and cursor are checked for range by the pagination helpers. */
export const listPayoutsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    reference,
    status: { type: 'string', enum: payoutMachine.statuses },
    limit: LIMIT_QUERY,
    cursor: CURSOR_QUERY,
  },
} as const;
