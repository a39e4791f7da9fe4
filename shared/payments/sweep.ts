import type { ServiceContext } from '../context';
import { transact } from '../db/transact';
import type { PaymentTrigger } from '../domain/payment';
import type { Logger } from '../logger';
import { ProviderError } from '../providers/errors';
import { providers } from '../providers/registry';
import type { ProviderStatus } from '../providers/types';
import { findPayment, lockPayment, PAYMENTS, type PaymentRow } from './rows';
import { applyToLockedPayment, type TriggerDetails } from './transition';

/**
 * Reconciliation sweep: no payment stays open forever. A mobile-money payment still
 * `processing` at the end of its provider window is checked with the provider; its outcome is
 * applied, or the payment is cancelled when the provider has none. A card payment still open
 * at the end of its checkout window is cancelled. When the provider cannot be reached, the
 * payment is asked about again at the next sweep, and cancelled once UNREACHABLE_GRACE_MS have
 * passed beyond its window.
 */

export const UNREACHABLE_GRACE_MS = 60 * 60 * 1000;
const BATCH = 100;
const PARALLEL = 10;

/** Claims open payments past their window (SKIP LOCKED: sweeps of several reconciler copies share the work). */
async function claimExpired(ctx: ServiceContext, recheckMs: number): Promise<string[]> {
  return ctx.db.transaction(async (trx) => {
    const rows: { id: string }[] = await trx(PAYMENTS)
      .whereIn('status', ['pending', 'processing'])
      .where('window_ends_at', '<', trx.fn.now())
      .where((q) => q.whereNull('checked_at').orWhere('checked_at', '<', trx.raw(`now() - make_interval(secs => ?)`, [recheckMs / 1000])))
      .orderBy('window_ends_at')
      .limit(BATCH)
      .forUpdate()
      .skipLocked()
      .select('id');
    if (rows.length) await trx(PAYMENTS).whereIn('id', rows.map((r) => r.id)).update({ checked_at: trx.fn.now() });
    return rows.map((r) => r.id);
  });
}

function verdict(status: ProviderStatus): { trigger: PaymentTrigger; details: TriggerDetails } {
  switch (status.state) {
    case 'succeeded':
      return { trigger: 'succeed', details: { reason: 'reconciliation', providerRef: status.providerRef } };
    case 'failed':
      return { trigger: 'fail', details: { reason: 'reconciliation', providerRef: status.providerRef, failureCode: status.failureCode, failureMessage: status.failureMessage } };
    case 'cancelled':
      return { trigger: 'cancel', details: { reason: 'reconciliation', providerRef: status.providerRef } };
    default:
      // the provider has no outcome (never answered, or never got the push): the window is over
      return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
  }
}

/** What to do with one expired payment, or null to ask again at the next sweep. */
async function decideExpired(ctx: ServiceContext, p: PaymentRow, log: Logger): Promise<{ trigger: PaymentTrigger; details: TriggerDetails } | null> {
  if (p.method === 'card') return { trigger: 'cancel', details: { reason: 'checkout-window-expired' } };
  const provider = providers(ctx.config).for(p.environment, p.operator!);
  if (!provider) return { trigger: 'cancel', details: { reason: 'provider-window-expired' } };
  try {
    return verdict(await provider.status('payment', p.id));
  } catch (err) {
    const e = err as ProviderError;
    if (Date.now() - p.window_ends_at.getTime() > UNREACHABLE_GRACE_MS) {
      return { trigger: 'cancel', details: { reason: 'provider-unreachable' } };
    }
    log.warn({ paymentId: p.id, provider: provider.id, code: e.code, err: { message: e.message } }, 'provider status unavailable; will ask again');
    return null;
  }
}

async function settleExpired(ctx: ServiceContext, id: string, log: Logger): Promise<string> {
  const p = await findPayment(ctx.db, id);
  if (!p || (p.status !== 'pending' && p.status !== 'processing')) return 'closed';
  const decision = await decideExpired(ctx, p, log);
  if (!decision) return 'deferred';
  return transact({ db: ctx.db, queues: ctx.queues, log }, async (trx, outbox) => {
    const locked = await lockPayment(trx, id);
    if (!locked) return 'closed';
    const { outcome, payment } = await applyToLockedPayment(trx, outbox, locked, decision.trigger, decision.details);
    if (outcome === 'applied') log.info({ paymentId: id, status: payment.status, reason: decision.details.reason }, 'expired payment settled');
    return outcome === 'applied' ? payment.status : outcome;
  });
}

export async function sweepExpiredPayments(ctx: ServiceContext, log: Logger = ctx.log): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (;;) {
    const ids = await claimExpired(ctx, ctx.config.reconcileIntervalMs);
    for (let i = 0; i < ids.length; i += PARALLEL) {
      const results = await Promise.all(
        ids.slice(i, i + PARALLEL).map((id) =>
          settleExpired(ctx, id, log).catch((err) => {
            log.error({ paymentId: id, err: { message: (err as Error).message } }, 'expired payment not settled');
            return 'error';
          }),
        ),
      );
      for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
    }
    if (ids.length < BATCH) return counts;
  }
}
