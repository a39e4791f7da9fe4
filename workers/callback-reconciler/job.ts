import { UnrecoverableError } from 'bullmq';
import { UUID_V4_RE } from '../../shared/domain/ids';
import { KINDS } from '../../shared/operations/kinds';
import type { ProviderObjectKind } from '../../shared/providers/types';

/** Payload of a callback-reconciler job: the inbox row's id only. */
export interface CallbackJob {
  callbackId: string;
  /** the operation's kind, as the provider named it (absent from older jobs) */
  kind?: ProviderObjectKind;
  requestId?: string;
}

export function guardCallbackJob(data: unknown): CallbackJob {
  const d = data as Partial<CallbackJob> | null;
  if (!d || typeof d.callbackId !== 'string' || !UUID_V4_RE.test(d.callbackId)) {
    throw new UnrecoverableError('callback-reconciler job without a valid callbackId');
  }
  const kind = typeof d.kind === 'string' && Object.hasOwn(KINDS, d.kind) ? (d.kind as ProviderObjectKind) : undefined;
  return { callbackId: d.callbackId, kind, requestId: typeof d.requestId === 'string' ? d.requestId : undefined };
}
