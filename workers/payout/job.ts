import { UnrecoverableError } from 'bullmq';
import { isId } from '../../shared/domain/ids';

/** Payload of a payout job: the payout's id only (the processor re-reads the row). */
export interface PayoutJob {
  payoutId: string;
  requestId?: string;
}

export function guardPayoutJob(data: unknown): PayoutJob {
  const d = data as Partial<PayoutJob> | null;
  if (!d || typeof d.payoutId !== 'string' || !isId('payout', d.payoutId)) {
    throw new UnrecoverableError('payout job without a valid payoutId');
  }
  return { payoutId: d.payoutId, requestId: typeof d.requestId === 'string' ? d.requestId : undefined };
}
