import type { ServiceContext } from '../context';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import { ProviderError } from '../providers/errors';
import { providers } from '../providers/registry';
import { findPayout, lockPayout } from './rows';
import { applyToLockedPayout, type PayoutOutcome, type PayoutOutcomeDetails } from './transition';
import type { PayoutTrigger } from '../domain/payout';

export type SendPayoutResult = 'sent' | 'already-sent' | 'not-open' | 'refused' | 'unknown-payout';

/**
 * Hands a `pending` payout to its provider and marks it `processing`. Our payout id is the
 * provider's idempotency key, so a job run again (crash, timeout) gets the same answer and the
 * phone is paid once. A retryable provider error is thrown for BullMQ to retry with backoff; a
 * permanent refusal fails the payout and gives amount + fee back.
 */
export async function sendPayout(ctx: ServiceContext, payoutId: string, log: Logger): Promise<SendPayoutResult> {
  const p = await findPayout(ctx.db, payoutId);
  if (!p) {
    log.warn({ payoutId }, 'payout job for an unknown payout');
    return 'unknown-payout';
  }
  if (p.status !== 'pending') return 'not-open';

  const provider = p.provider ? providers(ctx.config).byProviderId(p.provider) : undefined;
  if (!provider) {
    await apply(ctx, payoutId, 'provider_failed', { reason: 'provider-refused', failureCode: 'operator-unavailable', failureMessage: `No ${p.operator} provider is configured` }, log);
    return 'refused';
  }
  let providerRef: string;
  try {
    ({ providerRef } = await provider.payout({ payoutId: p.id, amount: p.amount, currency: p.currency, msisdn: p.phone, description: p.description }));
  } catch (err) {
    if (err instanceof ProviderError && !err.retryable) {
      await apply(ctx, payoutId, 'provider_failed', { reason: 'provider-refused', failureCode: err.code, failureMessage: err.message }, log);
      return 'refused';
    }
    throw err;
  }
  const outcome = await apply(ctx, payoutId, 'sent', { reason: 'provider-accepted', providerRef }, log);
  log.info({ payoutId, provider: provider.id, outcome }, 'payout sent');
  return outcome === 'applied' ? 'sent' : 'already-sent';
}

async function apply(ctx: ServiceContext, payoutId: string, trigger: PayoutTrigger, details: PayoutOutcomeDetails, log: Logger): Promise<PayoutOutcome> {
  const outcome = await transact({ db: ctx.db, queues: ctx.queues, log }, async (trx, outbox) => {
    const locked = (await lockPayout(trx, payoutId))!;
    return applyToLockedPayout(trx, outbox, locked, trigger, details);
  });
  if (trigger === 'provider_failed') log.warn({ payoutId, failureCode: details.failureCode, outcome }, 'payout refused by the provider');
  return outcome;
}
