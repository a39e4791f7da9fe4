import type { Trx } from '../db/knex';
import { updateWithHistory } from '../db/history';
import type { OutboxWriter } from '../db/transact';
import { nowUnix } from '../domain/ids';
import { outgoingKinds, outgoingSettle } from '../domain/ledger';
import { nextRefundStatus, type RefundTrigger } from '../domain/refund';
import { recordEvent } from '../events/record';
import { post, reverse } from '../ledger/postings';
import { lockPayment } from '../payments/rows';
import { setAmountRefunded } from './payment';
import { REFUNDS } from './rows';
import { refundView, type RefundRow } from './view';

/**
 * The one place a refund changes status after its creation. The caller holds the refund's row
 * lock (lockRefund) and the transaction; here the state machine decides, and the change, its
 * history row, the ledger posting, the payment's refunded amount and the event are written
 * together. Locks are taken refund, then payment, then ledger accounts (creation takes payment
 * then accounts), so the flows never wait on each other in a circle; the money goes back to
 * available when the provider refuses.
 */

export interface RefundOutcomeDetails {
  /** why, for the status history: provider-callback, provider-refused, reconciliation */
  reason: string;
  providerRef?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

export type RefundOutcome = 'applied' | 'duplicate' | 'ignored-late';

const REACHED: Record<RefundTrigger, RefundRow['status']> = { provider_succeeded: 'succeeded', provider_failed: 'failed' };

export async function applyToLockedRefund(trx: Trx, outbox: OutboxWriter, r: RefundRow, trigger: RefundTrigger, details: RefundOutcomeDetails): Promise<RefundOutcome> {
  const to = nextRefundStatus(r.status, trigger);
  if (!to) return r.status === REACHED[trigger] ? 'duplicate' : 'ignored-late';

  const patch: Partial<RefundRow> & { updated_at: Date } = { status: to, version: r.version + 1, completed: nowUnix(), updated_at: new Date() };
  if (to === 'failed') {
    patch.failure_code = details.failureCode ?? 'provider-failed';
    patch.failure_message = details.failureMessage ?? 'The provider refused the refund';
  }
  if (details.providerRef && !r.provider_ref) patch.provider_ref = details.providerRef;
  const updated = await updateWithHistory<RefundRow>(trx, REFUNDS, r.id, patch, { table: 'refund_status_changes', column: 'refund_id', from: r.status, to, reason: details.reason });
  if (to === 'failed') {
    // the payment's refunded amount goes down (back to `succeeded` if it was `refunded`)
    const payment = (await lockPayment(trx, r.payment_id))!;
    await setAmountRefunded(trx, payment, payment.amount_refunded - r.amount, `refund ${r.id} failed`);
  }
  await recordEvent(trx, outbox, {
    merchantId: r.merchant_id,
    environment: r.environment,
    type: to === 'succeeded' ? 'refund.succeeded' : 'refund.failed',
    objectId: r.id,
    objectVersion: updated.version,
    object: refundView(updated),
  });
  // last: the postings lock the merchant's ledger accounts, held only from here to the commit
  const kinds = outgoingKinds('refund');
  if (to === 'succeeded') {
    await post(trx, outgoingSettle('refund', { referenceId: r.id, merchantId: r.merchant_id, environment: r.environment, currency: r.currency, amount: r.amount }));
  } else {
    await reverse(trx, kinds.debit, r.id, kinds.return);
  }
  return 'applied';
}
