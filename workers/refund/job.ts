import { UnrecoverableError } from 'bullmq';
import { isId } from '../../shared/domain/ids';

/** Payload of a refund job: the refund's id only (the processor re-reads the row). */
export interface RefundJob {
  refundId: string;
  requestId?: string;
}

export function guardRefundJob(data: unknown): RefundJob {
  const d = data as Partial<RefundJob> | null;
  if (!d || typeof d.refundId !== 'string' || !isId('refund', d.refundId)) {
    throw new UnrecoverableError('refund job without a valid refundId');
  }
  return { refundId: d.refundId, requestId: typeof d.requestId === 'string' ? d.requestId : undefined };
}
