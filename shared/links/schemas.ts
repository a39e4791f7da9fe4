import { MONEY } from '../validation';
import { CURSOR_QUERY, LIMIT_QUERY } from '../db/pagination';
import { createPaymentSchema } from '../payments/schemas';
import type { Currency } from '../rules/ledger';
import type { MetadataValue } from '../vocabulary';

/** Request schemas of the payment-link routes (docs/decisions.md#payment-links); also the API description's. */

export type LinkMethod = 'mobile_money' | 'card';
export const LINK_METHODS: readonly LinkMethod[] = ['mobile_money', 'card'];

export interface CreatePaymentLinkInput {
  currency: Currency;
  amount?: number;
  min_amount?: number;
  max_amount?: number;
  description: string;
  methods?: LinkMethod[];
  single_use?: boolean;
  expires_at?: number;
  return_url?: string;
  metadata?: Record<string, MetadataValue>;
}

const P = createPaymentSchema.properties;

export const createPaymentLinkSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'description'],
  properties: {
    currency: P.currency,
    amount: {
      ...MONEY,
      description:
        'The amount the client pays, in minor units; without it the client types it (within min_amount and max_amount)',
    },
    min_amount: { ...MONEY, description: 'Open amount only: the least the client may type' },
    max_amount: { ...MONEY, description: 'Open amount only: the most the client may type' },
    description: { type: 'string', minLength: 1, maxLength: 1000, description: 'Shown to the client' },
    methods: {
      type: 'array',
      items: { type: 'string', enum: LINK_METHODS },
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
      description: 'How the client may pay (default both)',
    },
    single_use: { type: 'boolean', description: 'Used up once a payment through it has succeeded (default false)' },
    expires_at: {
      type: 'integer',
      minimum: 0,
      maximum: 99_999_999_999,
      description: 'Unix seconds after which the link takes no payment',
    },
    return_url: { ...P.return_url, description: 'Where the client is sent back after paying' },
    metadata: P.metadata,
  },
} as const;

export interface ListPaymentLinksQuery {
  limit?: string;
  cursor?: string;
}

export const listPaymentLinksSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: LIMIT_QUERY,
    cursor: CURSOR_QUERY,
  },
} as const;
