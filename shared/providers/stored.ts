import type { StoredCallback } from './connector';
import type { CallbackColumns } from '../db/rows';

/** A stored callback as the kernel reads it: its normalised columns, never its raw body. */
export function storedCallback(row: CallbackColumns): StoredCallback {
  return {
    id: row.id,
    provider: row.provider,
    verified: row.verified,
    eventId: row.provider_event_id ?? row.id,
    kind: row.object_kind as StoredCallback['kind'],
    objectId: row.object_id,
    status: row.reported_status as StoredCallback['status'],
    providerRef: row.provider_ref,
    failureCode: row.failure_code,
    failureMessage: row.failure_message,
    amount: row.amount === null ? null : Number(row.amount),
    currency: row.currency as StoredCallback['currency'],
  };
}

/** True when the callback names an amount or currency other than what the operation asked the provider to move. */
export function amountDiffers(
  callback: Pick<StoredCallback, 'amount' | 'currency'>,
  moved: { amount: number; currency: string },
): boolean {
  return (
    (callback.amount !== null && callback.amount !== moved.amount) ||
    (callback.currency !== null && callback.currency !== moved.currency)
  );
}
