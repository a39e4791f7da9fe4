// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../shared/tracing/register';
import { runPool } from '../bootstrap';
import { foldCredits } from '../../shared/ledger/postings';
import { settle } from '../../shared/settlements/settle';
import { reconcileDue } from '../../shared/reconciliation/daily';

/** How often unfolded credits are folded into the cached balances (postings.ts). */
const FOLD_INTERVAL_MS = 5_000;

/**
 * settlement: every SETTLEMENT_CHECK_INTERVAL_MS, settles what the last daily cut-off
 * (SETTLEMENT_TIME_UTC) left unsettled. Between cut-offs a check finds every group already
 * settled and writes nothing. Any number of copies may run: settle() makes one batch per
 * merchant, environment, currency and period whatever runs beside it. Also folds the ledger's
 * unfolded credits into the cached balances, one account at a time, under its lock, and
 * reconciles the day before with each provider's statement (shared/reconciliation/daily.ts).
 */
void runPool({
  name: 'settlement',
  loops: [
    {
      name: 'daily-settlement',
      intervalMs: (ctx) => ctx.config.settlement.checkIntervalMs,
      run: (ctx) =>
        settle(ctx, {
          now: Math.floor(ctx.clock.now() / 1000),
          cutoffMinutesUtc: ctx.config.settlement.cutoffMinutesUtc,
        }),
    },
    {
      // the day before, against each provider's statement, once its lag has passed (docs/reconciliation.md)
      name: 'daily-reconciliation',
      intervalMs: (ctx) => ctx.config.reconciliation.checkIntervalMs,
      run: async (ctx) => {
        await reconcileDue(ctx);
      },
    },
    {
      name: 'fold-credits',
      intervalMs: () => FOLD_INTERVAL_MS,
      run: async (ctx) => {
        // a bounded share per tick: a merchant credited without pause must not keep the loop busy
        for (let i = 0; i < 10 && (await foldCredits(ctx.db)) > 0; i++);
      },
    },
  ],
});
