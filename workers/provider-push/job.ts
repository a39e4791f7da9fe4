import { UnrecoverableError } from 'bullmq';
import { isId } from '../../shared/domain/ids';

/** Payload of a provider-push job: the payment's id only (the processor re-reads the row). */
export interface PushJob {
  paymentId: string;
  requestId?: string;
}

export function guardPushJob(data: unknown): PushJob {
  const d = data as Partial<PushJob> | null;
  if (!d || typeof d.paymentId !== 'string' || !isId('payment', d.paymentId)) {
    throw new UnrecoverableError('provider-push job without a valid paymentId');
  }
  return { paymentId: d.paymentId, requestId: typeof d.requestId === 'string' ? d.requestId : undefined };
}
