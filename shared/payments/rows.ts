import type { OperationRow } from '../operations/kind';
import type { FeeBearer } from '../domain/fees';
import type { PaymentStatus } from '../operations/machines';
import type { Operator } from '../vocabulary';
import type { MetadataValue } from './schemas';
import type { CardDetails } from '../cards/acquirer';

/** A row of `payments` (bigint columns arrive as numbers, see shared/db/knex.ts). */
export interface PaymentRow extends OperationRow {
  status: PaymentStatus;
  method: 'mobile_money' | 'card';
  amount: number;
  amount_charged: number;
  amount_net: number;
  fee: number;
  fee_bearer: FeeBearer;
  amount_refunded: number;
  reference: string;
  description: string | null;
  metadata: Record<string, MetadataValue>;
  operator: Operator | null;
  phone: string | null;
  customer_email: string | null;
  customer_name: string | null;
  return_url: string | null;
  created: number;
  /** card payments: what the acquirer reported of the card (null until charged) */
  card: CardDetails | null;
  /** card payments: the vault token posted by the checkout, until the charge job has used it */
  checkout_token: string | null;
  /** card payments: the issuer's 3-D Secure page while the challenge is under way (kept after it) */
  challenge_url: string | null;
  /** card payments: why the last token was refused (token-invalid, token-expired, token-used, token-foreign) */
  checkout_error: string | null;
}
