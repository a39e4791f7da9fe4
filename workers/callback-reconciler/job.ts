import { UnrecoverableError } from 'bullmq';
import { UUID_V4_RE } from '../../shared/domain/ids';

/** Payload of a callback-reconciler job: the inbox row's id only. */
export interface CallbackJob {
  callbackId: string;
  requestId?: string;
}

export function guardCallbackJob(data: unknown): CallbackJob {
  const d = data as Partial<CallbackJob> | null;
  if (!d || typeof d.callbackId !== 'string' || !UUID_V4_RE.test(d.callbackId)) {
    throw new UnrecoverableError('callback-reconciler job without a valid callbackId');
  }
  return { callbackId: d.callbackId, requestId: typeof d.requestId === 'string' ? d.requestId : undefined };
}
