import type { ServiceContext } from '../context';
import { findOperation } from '../db/sql/operationReads';
import { runSql } from '../db/sql/run';
import { transact } from '../db/transact';
import type { Logger } from '../logger';
import type { OperationKind, WindowAnswer } from './kind';
import { ATTENTION_AFTER_MS } from './attention';
import { isOpen } from './stateMachine';
import { applyTrigger, lockRow, writeColumns } from './transition';
import type { OperationRow } from '../db/rows';
import { askProvider } from './callbacks';
import { amountDiffers } from '../providers/stored';

/**
 * The sweep: no operation stays open without being asked about. Once an open operation's window
 * is over (`window_ends_at`), the sweep asks its provider and lets the kind decide
 * (`atWindowEnd`): apply the provider's outcome, end it (a payment may be cancelled), or ask
 * again at a later sweep (money out is never decided by guess). Money out the provider never
 * accepted is sent again (our id is its idempotency key, so nobody is paid twice). Rows are
 * claimed with SKIP LOCKED, so any number of pool copies share the work; `asked_at` spaces
 * out the asks about one operation.
 */

const BATCH = 100;
const PARALLEL = 10;
/** The longest wait between two asks about one operation (docs/decisions.md#faults-and-limits). */
export const MAX_ASK_INTERVAL_MS = 5 * 60 * 1000;

/** An operation claimed to be asked about, with the time it was last asked about before this one. */
interface Claimed {
  id: string;
  lastAsked: Date | null;
}

/** Whole hours open past its bound (ATTENTION_AFTER_MS after its window) at `t`: 0 before it, 1 in the hour after, ... */
function hoursPastBound(row: OperationRow, t: number): number {
  const past = t - row.window_ends_at.getTime() - ATTENTION_AFTER_MS;
  return past < 0 ? 0 : 1 + Math.floor(past / ATTENTION_AFTER_MS);
}

/**
 * Claims open operations past their window (or in a status the kind asks about early, within its
 * lead of the window's end: `askEarly`) that are due an ask: never asked, or asked
 * ASK_INTERVAL_MS × 2^(asks so far) ago, at most MAX_ASK_INTERVAL_MS.
 */
async function claimDue(ctx: ServiceContext, kind: OperationKind<any, any, any>): Promise<Claimed[]> {
  const now = new Date(ctx.clock.now());
  const early = kind.askEarly?.(ctx.config) ?? null;
  const due = [
    kind.machine.open,
    now,
    MAX_ASK_INTERVAL_MS,
    ctx.config.askIntervalMs,
    early && early.beforeEndMs > 0 ? early.statuses : [],
    early ? Math.max(0, early.beforeEndMs) : 0,
  ];
  if ((await runSql(ctx.db, kind.sql.due, due)).length === 0) return [];
  return ctx.db.transaction(async (trx) => {
    const rows = await runSql<OperationRow>(trx, kind.sql.claimDue, [...due, BATCH]);
    await writeColumns(
      trx,
      kind,
      rows.map((row) => ({ row, patch: { asked_at: now, asks: row.asks + 1 } })),
    );
    return rows.map((r) => ({ id: r.id, lastAsked: r.asked_at }));
  });
}

async function ask(ctx: ServiceContext, kind: OperationKind<any, any, any>, row: OperationRow): Promise<WindowAnswer> {
  const provider = row.provider ? ctx.providers.byProviderId(row.provider) : undefined;
  if (!provider) return { kind: 'no-provider' };
  try {
    const status = await askProvider(ctx, provider, kind, row);
    // a status naming another amount than was asked is not followed: ask again (and an operator looks: the log)
    if (
      status.state === 'succeeded' &&
      amountDiffers({ amount: status.amount ?? null, currency: status.currency ?? null }, kind.moved(row))
    ) {
      return {
        kind: 'unreachable',
        error: new Error('the provider reports another amount or currency than the operation'),
      };
    }
    return { ...status, kind: 'status' } as WindowAnswer;
  } catch (err) {
    return { kind: 'unreachable', error: err as Error };
  }
}

/** One operation past its window: what the sweep did with it. */
async function sweepOne<R extends OperationRow>(
  ctx: ServiceContext,
  kind: OperationKind<R, any, any>,
  { id, lastAsked }: Claimed,
  log: Logger,
): Promise<string> {
  const row = await findOperation<R>(ctx.db, kind.sql, id);
  if (!row || !isOpen(kind.machine, row.status)) return 'closed';
  const deps = { db: ctx.db, outbox: ctx.outbox, clock: ctx.clock, log };
  if (!row.sent_at && kind.unsentAtWindowEnd === 'resend') {
    await transact(deps, (_trx, outbox) => outbox.add(kind.send.queue, kind.send.job, { [kind.send.idField]: id }));
    return 'resent';
  }
  const answer = await ask(ctx, kind, row);
  const now = ctx.clock.now();
  // asked before its window's end (askEarly): only the provider's own outcome decides it now
  const early =
    row.window_ends_at.getTime() > now &&
    (kind.askEarly?.(ctx.config)?.statuses.includes(row.status) ?? false) &&
    !(answer.kind === 'status' && ['succeeded', 'failed', 'cancelled'].includes(answer.state));
  const verdict = early ? 'ask-again' : kind.atWindowEnd(row, answer);
  if (verdict === 'ask-again') {
    const hours = hoursPastBound(row, now);
    if (hours > 0) {
      // past its bound it is listed by GET /admin/attention; the log says so once an hour, not at every ask
      if (lastAsked === null || hoursPastBound(row, lastAsked.getTime()) < hours) {
        const why =
          answer.kind === 'status'
            ? answer.state
            : answer.kind === 'unreachable'
              ? 'provider-unreachable'
              : answer.kind;
        log.error(
          {
            kind: kind.name,
            id,
            provider: row.provider,
            status: row.status,
            hoursPastWindow: Math.floor((now - row.window_ends_at.getTime()) / 3_600_000),
            providerAnswer: why,
          },
          'operation still open an hour or more past its window: an operator should look (GET /admin/attention)',
        );
      }
    } else if (answer.kind === 'unreachable') {
      log.warn(
        { kind: kind.name, id, provider: row.provider, err: { message: answer.error.message } },
        'provider could not be asked; will ask again',
      );
    } else if (answer.kind === 'status' && answer.state === 'not_found' && row.sent_at) {
      // the provider accepted it, so "not found" is the provider's fault: an operator should look
      log.error({ kind: kind.name, id, provider: row.provider }, 'the provider does not know an operation it accepted');
    }
    return 'deferred';
  }
  return transact(deps, async (trx, outbox) => {
    const locked = await lockRow(trx, kind, id);
    if (!locked) return 'closed';
    const { outcome, row: after } = await applyTrigger(trx, outbox, kind, locked, verdict.trigger, {
      ...verdict.details,
      at: now,
    });
    if (outcome === 'applied')
      log.info(
        { kind: kind.name, id, status: after.status, reason: verdict.details.reason },
        'operation past its window decided',
      );
    return outcome === 'applied' ? after.status : outcome;
  });
}

/** One sweep over every open operation of a kind past its window; returns counts by outcome. */
export async function sweepOpen(
  ctx: ServiceContext,
  kind: OperationKind<any, any, any>,
  log: Logger = ctx.log,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (;;) {
    const ids = await claimDue(ctx, kind);
    for (let i = 0; i < ids.length; i += PARALLEL) {
      const results = await Promise.all(
        ids.slice(i, i + PARALLEL).map((claimed) =>
          sweepOne(ctx, kind, claimed, log).catch((err) => {
            log.error(
              { kind: kind.name, id: claimed.id, err: { message: (err as Error).message } },
              'open operation not swept',
            );
            return 'error';
          }),
        ),
      );
      for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
    }
    if (ids.length < BATCH) return counts;
  }
}

/**
 * Asks the provider about one open operation now and applies its answer, exactly as the sweep
 * would (the reconciliation, when a provider's statement shows it completed or failed an
 * operation still open here: docs/reconciliation.md#categories). Returns what became of it.
 */
export function askNow(
  ctx: ServiceContext,
  kind: OperationKind<any, any, any>,
  id: string,
  log: Logger = ctx.log,
): Promise<string> {
  return sweepOne(ctx, kind, { id, lastAsked: null }, log);
}
