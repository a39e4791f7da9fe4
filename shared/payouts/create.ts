import { isUniqueViolation } from '../db/errors';
import type { TransactDeps } from '../db/transact';
import type { Caches } from '../ttlCache';
import { idempotentTransact, type IdempotentWrite } from '../idempotency';
import { feeFor } from '../rules/fees';
import { newId } from '../ids';
import { outgoingDebit } from '../rules/ledger';
import type { Caller } from '../caller';
import { operatorAccepts } from '../msisdn';
import { refuseIfClosed } from '../availability/closures';
import { BadRequest, Conflict, ValidationFailed } from '../errors';
import { MAX_AMOUNT } from '../money';
import { post } from '../ledger/postings';
import type { ProviderRegistry } from '../providers/registry';
import { connectorFor } from '../providers/routing';
import { newOperationFields } from '../operations/kind';
import { QUEUES } from '../queues/names';
import type { PayoutInput } from './schemas';
import { Merchant } from '../db/models';
import { createRow } from '../operations/transition';
import { outboxMessage } from '../queues/outbox';
import { payoutKind } from './kind';
import { payoutView, type PayoutObject } from './view';
import type { PayoutRow } from '../db/rows';

/**
 * POST /v1/payouts: one transaction with its Idempotency-Key, taking amount + fee (the merchant's
 * rule for the currency) from available. A reference this merchant and environment used is 409.
 */
export async function createPayout(
  deps: TransactDeps & { providerWindowMs: number; caches: Caches; providers: Pick<ProviderRegistry, 'route'> },
  viewer: Caller,
  input: PayoutInput,
  requestId?: string,
  key?: IdempotentWrite<PayoutObject>,
): Promise<PayoutObject> {
  if (!operatorAccepts(viewer.environment, input.operator, input.phone)) {
    throw new BadRequest('operator-mismatch', `The number does not belong to ${input.operator}`, 'phone');
  }
  await refuseIfClosed(deps, input.operator, 'payout');
  // the connector that will pay it, and that it can carry the amount (422 before anything is written or sent)
  const provider = connectorFor(
    deps.providers,
    viewer.environment,
    input.operator,
    'payout',
    input.currency,
    input.amount,
  ).id;
  try {
    return await idempotentTransact(deps, key, async (trx, outbox) => {
      const now = deps.clock.now();
      const merchant = (await Merchant.query(trx).findById(viewer.merchantId).select('fees'))!;
      const fee = feeFor(input.amount, merchant.fees[input.currency]);
      // docs/decisions.md#payments: every amount and fee is at most 10^12 minor units
      if (fee > MAX_AMOUNT) throw new ValidationFailed('amount', `amount: its fee is above ${MAX_AMOUNT} minor units`);
      const payout: PayoutRow = {
        id: newId('payout'),
        merchant_id: viewer.merchantId,
        environment: viewer.environment,
        status: 'pending',
        amount: input.amount,
        fee,
        currency: input.currency,
        method: input.method ?? 'mobile_money',
        operator: input.operator,
        phone: input.phone,
        reference: input.reference,
        description: input.description ?? null,
        metadata: input.metadata ?? {},
        provider,
        created: Math.floor(now / 1000),
        ...newOperationFields(deps.providerWindowMs, now),
      };
      await createRow(trx, outbox, payoutKind, payout, [
        outboxMessage(QUEUES.payout, 'send-payout', { payoutId: payout.id, requestId }),
      ]);
      // last, so the merchant's accounts stay locked only until the commit; 422 insufficient-balance undoes the rest
      await post(
        trx,
        outgoingDebit('payout', {
          referenceId: payout.id,
          merchantId: viewer.merchantId,
          environment: viewer.environment,
          currency: payout.currency,
          amount: payout.amount,
          fee,
        }),
      );
      return payoutView(payout);
    });
  } catch (err) {
    if (isUniqueViolation(err, 'payouts_reference_unique'))
      throw new Conflict('reference-conflict', 'This reference is already used by another payout of this merchant', {
        param: 'reference',
      });
    throw err;
  }
}
