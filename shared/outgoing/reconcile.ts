import type { ServiceContext } from '../context';
import type { Executor, Trx } from '../db/knex';
import { transact, type OutboxWriter } from '../db/transact';
import type { Environment } from '../domain/ledger';
import type { Logger } from '../logger';
import { providers } from '../providers/registry';
import type { ProviderStatus } from '../providers/types';

/**
 * Reconciliation of money on its way out (refunds, payouts). The provider's callback normally
 * ends each one; when it has not by the end of the provider window (callback lost, provider
 * down, send job given up), the sweep asks the provider. A definitive answer is applied like a
 * callback; one never handed over is queued again (our id is the provider's idempotency key, so
 * the client cannot be paid twice); one the provider still works on, or cannot be asked about,
 * is asked about again at a later sweep. Unlike a payment, it is never closed without the
 * provider's word: the money may already be on its way, so it stays in transit until then.
 */

const BATCH = 100;
const PARALLEL = 10;

export interface OpenOutgoing {
  environment: Environment;
  provider: string | null;
  /** the provider accepted it (its outcome is the provider's to give) */
  sent: boolean;
  /** still waiting for the provider's outcome */
  open: boolean;
}

export interface ProviderVerdict {
  succeeded: boolean;
  reason: string;
  providerRef: string | null;
  failureCode?: string;
  failureMessage?: string;
}

/** What the sweep needs to know about one kind of outgoing money. */
export interface OutgoingFlow {
  kind: 'refund' | 'payout';
  table: string;
  /** statuses in which the provider still owes an outcome */
  openStatuses: string[];
  find(db: Executor, id: string): Promise<OpenOutgoing | undefined>;
  /** queues the send job again */
  resend(outbox: OutboxWriter, id: string): Promise<void>;
  /** applies the provider's outcome under the row lock (the same path as a callback) */
  apply(trx: Trx, outbox: OutboxWriter, id: string, verdict: ProviderVerdict): Promise<string>;
}

/** Claims open rows older than their environment's provider window (SKIP LOCKED: several pool copies share the work). */
async function claim(ctx: ServiceContext, flow: OutgoingFlow): Promise<string[]> {
  const { providerWindowMs, reconcileIntervalMs } = ctx.config;
  return ctx.db.transaction(async (trx) => {
    const olderThan = (ms: number) => trx.raw(`now() - make_interval(secs => ?)`, [ms / 1000]);
    const rows: { id: string }[] = await trx(flow.table)
      .whereIn('status', flow.openStatuses)
      .where((q) =>
        q
          .where((t) => t.where('environment', 'test').where('created_at', '<', olderThan(providerWindowMs.test)))
          .orWhere((l) => l.where('environment', 'live').where('created_at', '<', olderThan(providerWindowMs.live))),
      )
      .where((q) => q.whereNull('checked_at').orWhere('checked_at', '<', olderThan(reconcileIntervalMs)))
      .orderBy('created_at')
      .limit(BATCH)
      .forUpdate()
      .skipLocked()
      .select('id');
    if (rows.length) await trx(flow.table).whereIn('id', rows.map((r) => r.id)).update({ checked_at: trx.fn.now() });
    return rows.map((r) => r.id);
  });
}

function verdictOf(status: ProviderStatus): ProviderVerdict | null {
  switch (status.state) {
    case 'succeeded':
      return { succeeded: true, reason: 'reconciliation', providerRef: status.providerRef };
    case 'failed':
    case 'cancelled':
      return { succeeded: false, reason: 'reconciliation', providerRef: status.providerRef, failureCode: status.failureCode, failureMessage: status.failureMessage };
    default:
      return null;
  }
}

async function reconcileOne(ctx: ServiceContext, flow: OutgoingFlow, id: string, log: Logger): Promise<string> {
  const row = await flow.find(ctx.db, id);
  if (!row?.open) return 'closed';
  const deps = { db: ctx.db, queues: ctx.queues, log };
  if (!row.sent) {
    await transact(deps, (_trx, outbox) => flow.resend(outbox, id));
    return 'resent';
  }
  const provider = row.provider ? providers(ctx.config).byProviderId(row.provider) : undefined;
  if (!provider) return 'deferred';
  let status: ProviderStatus;
  try {
    status = await provider.status(flow.kind, id);
  } catch (err) {
    log.warn({ [`${flow.kind}Id`]: id, provider: provider.id, err: { message: (err as Error).message } }, 'provider status unavailable; will ask again');
    return 'deferred';
  }
  const verdict = verdictOf(status);
  if (!verdict) {
    // the provider accepted it, so "not found" is the provider's fault: an operator should look
    if (status.state === 'not_found') log.error({ [`${flow.kind}Id`]: id, provider: provider.id }, `provider does not know a ${flow.kind} it accepted`);
    return 'deferred';
  }
  return transact(deps, (trx, outbox) => flow.apply(trx, outbox, id, verdict));
}

/** One sweep over every open refund or payout past its window; returns counts by outcome. */
export async function reconcileOpen(ctx: ServiceContext, flow: OutgoingFlow, log: Logger = ctx.log): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (;;) {
    const ids = await claim(ctx, flow);
    for (let i = 0; i < ids.length; i += PARALLEL) {
      const results = await Promise.all(
        ids.slice(i, i + PARALLEL).map((id) =>
          reconcileOne(ctx, flow, id, log).catch((err) => {
            log.error({ [`${flow.kind}Id`]: id, err: { message: (err as Error).message } }, `open ${flow.kind} not reconciled`);
            return 'error';
          }),
        ),
      );
      for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
    }
    if (ids.length < BATCH) return counts;
  }
}
