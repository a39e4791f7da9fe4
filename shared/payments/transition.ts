import type { Trx } from '../db/knex';
import { updateWithHistory } from '../db/history';
import type { OutboxWriter } from '../db/transact';
import { nowUnix } from '../domain/ids';
import { paymentCredit } from '../domain/ledger';
import { decide, type PaymentTrigger } from '../domain/payment';
import { recordEvent } from '../events/record';
import { post } from '../ledger/postings';
import { PAYMENTS, type PaymentRow } from './rows';
import { paymentEventObject } from './views';

/**
 * The one place a payment changes status. The caller holds the row lock (lockPayment) and the
 * transaction; here the domain decides, and the change, its history row, the ledger credit and
 * the event are written together.
 */

export interface TriggerDetails {
  /** why, for the status history: provider-callback, reconciliation, push-refused, ... */
  reason: string;
  providerRef?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

export type TriggerOutcome = 'applied' | 'duplicate' | 'ignored-late';

export class IllegalPaymentTransition extends Error {}

export async function applyToLockedPayment(
  trx: Trx,
  outbox: OutboxWriter,
  p: PaymentRow,
  trigger: PaymentTrigger,
  details: TriggerDetails,
): Promise<{ outcome: TriggerOutcome; payment: PaymentRow }> {
  const d = decide(p.status, trigger);
  if (d.kind === 'illegal') throw new IllegalPaymentTransition(`${trigger} is not allowed on a ${p.status} payment (${p.id})`);
  if (d.kind !== 'move') return { outcome: d.kind, payment: p };

  const patch: Partial<PaymentRow> & { updated_at: Date } = { status: d.to, version: p.version + 1, updated_at: new Date() };
  if (d.completes) patch.completed = nowUnix();
  if (d.to === 'failed') {
    patch.failure_code = details.failureCode ?? 'provider-failed';
    patch.failure_message = details.failureMessage ?? 'The provider reported a failure';
  }
  if (details.providerRef && !p.provider_ref) patch.provider_ref = details.providerRef;
  const updated = await updateWithHistory<PaymentRow>(trx, PAYMENTS, p.id, patch, {
    table: 'payment_status_changes',
    column: 'payment_id',
    from: p.status,
    to: d.to,
    reason: details.reason,
  });

  if (d.event) {
    await recordEvent(trx, outbox, {
      merchantId: p.merchant_id,
      environment: p.environment,
      type: d.event,
      objectId: p.id,
      objectVersion: updated.version,
      object: paymentEventObject(updated),
    });
  }
  // last: a posting that takes money locks the merchant's accounts from here to the commit (a credit takes no lock)
  if (d.credit) {
    await post(
      trx,
      paymentCredit({
        paymentId: p.id,
        merchantId: p.merchant_id,
        environment: p.environment,
        currency: p.currency,
        amountCharged: p.amount_charged,
        amountNet: p.amount_net,
        fee: p.fee,
      }),
    );
  }
  return { outcome: 'applied', payment: updated };
}
