import type { Trx } from '../db/knex';
import { updateWithHistory } from '../db/history';
import type { OutboxWriter } from '../db/transact';
import { nowUnix } from '../domain/ids';
import { outgoingKinds, outgoingSettle } from '../domain/ledger';
import { nextPayoutStatus, type PayoutStatus, type PayoutTrigger } from '../domain/payout';
import { recordEvent } from '../events/record';
import { post, reverse } from '../ledger/postings';
import { PAYOUTS } from './rows';
import { payoutView, type PayoutRow } from './view';

/**
 * The one place a payout changes status after its creation. The caller holds the payout's row
 * lock (lockPayout) and the transaction; here the state machine decides, and the change, its
 * history row, the ledger posting and the event are written together.
 */

export interface PayoutOutcomeDetails {
  /** why, for the status history: provider-accepted, provider-callback, provider-refused */
  reason: string;
  providerRef?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

export type PayoutOutcome = 'applied' | 'duplicate' | 'ignored-late';

/** Statuses in which a trigger has already had its effect (the same report again). */
const ALREADY: Record<PayoutTrigger, PayoutStatus[]> = {
  sent: ['processing'],
  provider_succeeded: ['succeeded'],
  provider_failed: ['failed'],
};

export async function applyToLockedPayout(trx: Trx, outbox: OutboxWriter, p: PayoutRow, trigger: PayoutTrigger, details: PayoutOutcomeDetails): Promise<PayoutOutcome> {
  const to = nextPayoutStatus(p.status, trigger);
  if (!to) return ALREADY[trigger].includes(p.status) ? 'duplicate' : 'ignored-late';

  const patch: Partial<PayoutRow> & { updated_at: Date; sent_at?: Date } = { status: to, version: p.version + 1, updated_at: new Date() };
  if (details.providerRef && !p.provider_ref) patch.provider_ref = details.providerRef;
  if (to === 'processing') patch.sent_at = new Date();
  else patch.completed = nowUnix();
  if (to === 'failed') {
    patch.failure_code = details.failureCode ?? 'provider-failed';
    patch.failure_message = details.failureMessage ?? 'The provider refused the payout';
  }

  const updated = await updateWithHistory<PayoutRow>(trx, PAYOUTS, p.id, patch, { table: 'payout_status_changes', column: 'payout_id', from: p.status, to, reason: details.reason });
  if (to === 'succeeded' || to === 'failed') {
    await recordEvent(trx, outbox, {
      merchantId: p.merchant_id,
      environment: p.environment,
      type: to === 'succeeded' ? 'payout.succeeded' : 'payout.failed',
      objectId: p.id,
      objectVersion: updated.version,
      object: payoutView(updated),
    });
  }
  // last: the postings lock the merchant's ledger accounts, held only from here to the commit
  const kinds = outgoingKinds('payout');
  if (to === 'succeeded') {
    await post(trx, outgoingSettle('payout', { referenceId: p.id, merchantId: p.merchant_id, environment: p.environment, currency: p.currency, amount: p.amount, fee: p.fee }));
  }
  // amount and fee go back to available
  if (to === 'failed') await reverse(trx, kinds.debit, p.id, kinds.return);
  return 'applied';
}
