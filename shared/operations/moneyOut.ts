import type { Trx } from '../db/knex';
import { outgoingKinds, outgoingDeliver, type OutgoingKind } from '../rules/ledger';
import { post, reverse } from '../ledger/postings';
import type { Trigger } from './stateMachine';
import type { OperationKind } from './kind';
import type { OperationRow } from '../db/rows';

/**
 * What refunds and payouts (money leaving a merchant's balance for a client) share as kinds:
 * the money left `available` at creation and waits in transit; the provider's success sends it
 * on (`deliver`), a failure or cancellation gives it back (`return`). At the end of the window
 * only the provider's word decides: while it has no outcome, or cannot be asked, the money may
 * already be on its way, so the operation stays open and is asked again.
 */
export function moneyOutPolicy<R extends OperationRow & { amount: number; fee?: number }>(
  name: OutgoingKind,
): Pick<OperationKind<R>, 'reported' | 'unsentAtWindowEnd' | 'atWindowEnd' | 'post'> {
  const kinds = outgoingKinds(name);
  return {
    reported: (status): Trigger => (status === 'succeeded' ? 'succeed' : 'fail'),
    unsentAtWindowEnd: 'resend',
    atWindowEnd(_row, answer) {
      if (answer.kind !== 'status') return 'ask-again';
      const { state, providerRef, failureCode, failureMessage } = answer;
      if (state === 'succeeded') return { trigger: 'succeed', details: { reason: 'provider-asked', providerRef } };
      if (state === 'failed' || state === 'cancelled')
        return { trigger: 'fail', details: { reason: 'provider-asked', providerRef, failureCode, failureMessage } };
      return 'ask-again';
    },
    async post(trx: Trx, row: R, effect) {
      if (effect === 'deliver') {
        await post(
          trx,
          outgoingDeliver(name, {
            referenceId: row.id,
            merchantId: row.merchant_id,
            environment: row.environment,
            currency: row.currency,
            amount: row.amount,
            fee: row.fee,
            provider: row.provider,
          }),
        );
      } else if (effect === 'return') {
        await reverse(trx, kinds.debit, row.id, kinds.return);
      }
    },
  };
}
