import { runPool } from '../bootstrap';
import { nowUnix } from '../../shared/domain/ids';
import { settle } from '../../shared/settlements/settle';

/**
 * settlement: every SETTLEMENT_CHECK_INTERVAL_MS, settles what the last daily cut-off
 * (SETTLEMENT_TIME_UTC) left unsettled. Between cut-offs a check finds every group already
 * settled and writes nothing. Any number of copies may run: settle() makes one batch per
 * merchant, environment, currency and period whatever runs beside it.
 */
void runPool({
  name: 'settlement',
  loops: [
    {
      name: 'daily-settlement',
      intervalMs: (ctx) => ctx.config.settlement.checkIntervalMs,
      run: (ctx) => settle(ctx, { now: nowUnix(), cutoffMinutesUtc: ctx.config.settlement.cutoffMinutesUtc }),
    },
  ],
});
