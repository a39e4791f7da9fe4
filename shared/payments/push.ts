import type { ServiceContext } from '../context';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import { ProviderError } from '../providers/errors';
import { providers } from '../providers/registry';
import { findPayment, lockPayment, PAYMENTS } from './rows';
import { applyToLockedPayment, type TriggerDetails } from './transition';

export type PushResult = 'pushed' | 'already-pushed' | 'not-open' | 'refused' | 'unknown-payment';

/**
 * Sends the push prompt of a `processing` mobile-money payment, once. Our payment id is the
 * provider's idempotency key: a job run again after a crash between the provider's answer and
 * our write (or a timeout) asks again with the same key and gets the same answer, with no
 * second prompt. A retryable provider error is thrown for BullMQ to retry with backoff; a
 * permanent refusal fails the payment with the provider's failure code.
 */
export async function pushPayment(ctx: ServiceContext, paymentId: string, log: Logger): Promise<PushResult> {
  const p = await findPayment(ctx.db, paymentId);
  if (!p) {
    log.warn({ paymentId }, 'push for an unknown payment');
    return 'unknown-payment';
  }
  if (p.method !== 'mobile_money' || p.status !== 'processing') return 'not-open';
  if (p.pushed_at) return 'already-pushed';

  const provider = providers(ctx.config).for(p.environment, p.operator!);
  if (!provider) {
    return fail(ctx, paymentId, { reason: 'push-refused', failureCode: 'operator-unavailable', failureMessage: `No ${p.operator} provider is configured` }, log);
  }
  let providerRef: string;
  try {
    ({ providerRef } = await provider.push({ paymentId: p.id, amount: p.amount_charged, currency: p.currency, msisdn: p.phone!, description: p.description }));
  } catch (err) {
    if (err instanceof ProviderError && !err.retryable) {
      return fail(ctx, paymentId, { reason: 'push-refused', failureCode: err.code, failureMessage: err.message }, log);
    }
    throw err;
  }
  // set once, under the row lock the UPDATE takes; a second run finds pushed_at and stops above
  const updated = await ctx.db(PAYMENTS)
    .where({ id: paymentId })
    .whereNull('pushed_at')
    .update({
      pushed_at: ctx.db.fn.now(),
      provider_ref: ctx.db.raw('coalesce(provider_ref, ?)', [providerRef]),
      // provider_ref is part of the object: its first appearance is a change (a callback may have set it first)
      version: ctx.db.raw('version + (provider_ref is null)::int'),
      updated_at: ctx.db.fn.now(),
    });
  log.info({ paymentId, provider: provider.id }, updated ? 'push sent' : 'push already recorded');
  return updated ? 'pushed' : 'already-pushed';
}

async function fail(ctx: ServiceContext, paymentId: string, details: TriggerDetails, log: Logger): Promise<PushResult> {
  const outcome = await transact({ db: ctx.db, queues: ctx.queues, log }, async (trx, outbox) => {
    const locked = await lockPayment(trx, paymentId);
    if (!locked) return 'duplicate';
    return (await applyToLockedPayment(trx, outbox, locked, 'fail', details)).outcome;
  });
  log.warn({ paymentId, failureCode: details.failureCode, outcome }, 'push refused by the provider');
  return 'refused';
}
