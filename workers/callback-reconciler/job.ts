import { UnrecoverableError } from 'bullmq';
import { UUID_V4_RE } from '../../shared/ids';
import { KINDS } from '../../shared/kindRegistry';
import { CALLBACKS_PER_JOB } from '../../shared/providers/inbox';
import type { ProviderObjectKind } from '../../shared/providers/types';

/**
 * Payload of a callback-reconciler job: inbox row ids only. A lone callback's job names it
 * (`callbackId`); the job of callbacks stored together names them all (`callbackIds`,
 * comma-separated, at most CALLBACKS_PER_JOB), of one kind.
 */
export interface CallbackJob {
  callbackIds: string[];
  /** the operations' kind, as the provider named it (absent from older jobs) */
  kind?: ProviderObjectKind;
  requestId?: string;
  /** with traces on, a shared job's callbacks' own trace contexts, in the order of callbackIds (shared/providers/inbox.ts) */
  traceparents?: string[];
}

const invalid = () => new UnrecoverableError('callback-reconciler job without a valid callbackId or callbackIds');

export function guardCallbackJob(data: unknown): CallbackJob {
  const d = data as {
    callbackId?: unknown;
    callbackIds?: unknown;
    kind?: unknown;
    requestId?: unknown;
    traceparents?: unknown;
  } | null;
  if (!d) throw invalid();
  let ids: string[];
  if (typeof d.callbackId === 'string' && d.callbackIds === undefined) ids = [d.callbackId];
  else if (typeof d.callbackIds === 'string' && d.callbackId === undefined) ids = d.callbackIds.split(',');
  else throw invalid();
  if (ids.length > CALLBACKS_PER_JOB || ids.some((id) => !UUID_V4_RE.test(id)) || new Set(ids).size !== ids.length)
    throw invalid();
  const kind = typeof d.kind === 'string' && Object.hasOwn(KINDS, d.kind) ? (d.kind as ProviderObjectKind) : undefined;
  // trace contexts are a help, never a reason to refuse the work: a list that does not match is dropped
  const traceparents = typeof d.traceparents === 'string' ? d.traceparents.split(',') : undefined;
  return {
    callbackIds: ids,
    kind,
    requestId: typeof d.requestId === 'string' ? d.requestId : undefined,
    ...(traceparents?.length === ids.length ? { traceparents } : {}),
  };
}
