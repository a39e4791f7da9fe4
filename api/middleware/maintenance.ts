import type { Middleware } from 'koa';
import { Unavailable } from '../../shared/errors';
import { getMaintenance, type MaintenanceFlag } from '../../shared/settings';

const CACHE_MS = 1000;
let cached: { flag: MaintenanceFlag; at: number } | undefined;

/** Lets this process see a flag change at once (other processes within CACHE_MS). */
export function rememberMaintenance(flag: MaintenanceFlag): void {
  cached = { flag, at: Date.now() };
}

// (provider callbacks are mounted before this step: they stay up too)
const EXEMPT = /^\/(admin|health|metrics)(\/|$)/;

/** 503 `maintenance` with Retry-After while the flag is on; admin routes, health, metrics and provider callbacks stay up. */
export const maintenance: Middleware = async (ctx, next) => {
  if (EXEMPT.test(ctx.path)) return next();
  if (!cached || Date.now() - cached.at > CACHE_MS) {
    rememberMaintenance(await getMaintenance(ctx.services.db));
  }
  const flag = cached!.flag;
  if (flag.enabled) {
    throw new Unavailable('maintenance', 'The service is under maintenance', flag.retry_after);
  }
  return next();
};
