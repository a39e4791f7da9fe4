import type { OutboxMessage } from '../db/rows';
import type { EventRecord } from '../events/record';
import type { KeyRow } from '../idempotencySql';
import type { CreditPosting } from '../ledger/credit';

/**
 * One decision of the kernel, as the writer (writer.ts) carries it out: the row's change, and each
 * part it writes with it in its owner's terms (the key: shared/idempotencySql.ts; the event:
 * shared/events/record.ts; the deliveries: shared/webhooks/fanout.ts; the credit:
 * shared/ledger/credit.ts; the callback: shared/providers/callbackOutcome.ts).
 */
export interface OperationWrite {
  id: string;
  /** the status and version the row was read with (the compare-and-set); null: the row is created */
  from: { status: string; version: number } | null;
  /** written only while the row is still unsent (the provider's acceptance) */
  unsent?: boolean;
  /** a creation: the whole row; a change: the columns it sets */
  patch: Record<string, unknown>;
  /** the status history row of a move (a creation's is `created`); null: a stay */
  history: { to: string; reason: string } | null;
  /** the callback whose report this is: the write happens only while it is unprocessed, and marks it applied */
  callbackId?: string | null;
  /** a creation under an idempotency key: written only if the key was taken */
  key?: KeyRow | null;
  /** the row's environment (its posting's) */
  environment: string;
  event: EventRecord | null;
  deliveries: { id: string; webhook_id: string }[];
  outbox: OutboxMessage[];
  posting: CreditPosting | null;
}
