import type { ServiceContext } from '../context';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import { findPayment } from '../payments/rows';
import { ProviderError } from '../providers/errors';
import { providers } from '../providers/registry';
import { findRefund, lockRefund, REFUNDS } from './rows';
import { applyToLockedRefund, type RefundOutcomeDetails } from './transition';

export type SendRefundResult = 'sent' | 'already-sent' | 'not-open' | 'refused' | 'unknown-refund';

/**
 * Asks the payment's provider to send a `pending` refund back to the client's phone, once. Our
 * refund id is the provider's idempotency key, so a job run again (crash, timeout) gets the same
 * answer and the client is credited once. A retryable provider error is thrown for BullMQ to
 * retry with backoff; a permanent refusal fails the refund and gives the money back.
 */
export async function sendRefund(ctx: ServiceContext, refundId: string, log: Logger): Promise<SendRefundResult> {
  const r = await findRefund(ctx.db, refundId);
  if (!r) {
    log.warn({ refundId }, 'refund job for an unknown refund');
    return 'unknown-refund';
  }
  if (r.status !== 'pending') return 'not-open';
  if (r.sent_at) return 'already-sent';

  const provider = r.provider ? providers(ctx.config).byProviderId(r.provider) : undefined;
  if (!provider) {
    return refuse(ctx, refundId, { reason: 'provider-refused', failureCode: 'operator-unavailable', failureMessage: `No provider ${r.provider ?? ''} is configured` }, log);
  }
  const payment = (await findPayment(ctx.db, r.payment_id))!;
  let providerRef: string;
  try {
    ({ providerRef } = await provider.refund({
      refundId: r.id,
      paymentId: payment.id,
      paymentProviderRef: payment.provider_ref,
      amount: r.amount,
      currency: r.currency,
      msisdn: r.phone,
    }));
  } catch (err) {
    if (err instanceof ProviderError && !err.retryable) {
      return refuse(ctx, refundId, { reason: 'provider-refused', failureCode: err.code, failureMessage: err.message }, log);
    }
    throw err;
  }
  // set once; a second run finds sent_at and stops above
  const updated = await ctx.db(REFUNDS)
    .where({ id: refundId })
    .whereNull('sent_at')
    .update({ sent_at: ctx.db.fn.now(), provider_ref: ctx.db.raw('coalesce(provider_ref, ?)', [providerRef]), updated_at: ctx.db.fn.now() });
  log.info({ refundId, provider: provider.id }, updated ? 'refund sent' : 'refund already recorded as sent');
  return updated ? 'sent' : 'already-sent';
}

async function refuse(ctx: ServiceContext, refundId: string, details: RefundOutcomeDetails, log: Logger): Promise<SendRefundResult> {
  const outcome = await transact({ db: ctx.db, queues: ctx.queues, log }, async (trx, outbox) => {
    const locked = await lockRefund(trx, refundId);
    if (!locked) return 'duplicate';
    return applyToLockedRefund(trx, outbox, locked, 'provider_failed', details);
  });
  log.warn({ refundId, failureCode: details.failureCode, outcome }, 'refund refused by the provider');
  return 'refused';
}
