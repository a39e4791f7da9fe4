import type { Middleware } from 'koa';
import { Unavailable } from '../../shared/errors';
import { getMaintenance, type MaintenanceFlag } from '../../shared/maintenance';
import type { Caches } from '../../shared/ttlCache';

const CACHE_MS = 1000;
/** The flag as this process knows it (the context's caches): at most CACHE_MS old. */
const flagCache = (caches: Caches) => caches.ttl<MaintenanceFlag>('maintenance', CACHE_MS, 1);

/** Lets this process see a flag change at once (other processes within CACHE_MS). */
export function rememberMaintenance(caches: Caches, flag: MaintenanceFlag): void {
  flagCache(caches).set('flag', Promise.resolve(flag));
}

const EXEMPT = /^\/(admin|health|metrics)(\/|$)/;

/** 503 `maintenance` with Retry-After while the flag is on; admin routes, health, metrics and provider callbacks stay up. */
export const maintenance: Middleware = async (ctx, next) => {
  if (EXEMPT.test(ctx.path)) return next();
  const flag = await flagCache(ctx.services.caches).get('flag', () => getMaintenance(ctx.services.db));
  if (flag.enabled) throw new Unavailable('maintenance', 'The service is under maintenance', flag.retry_after);
  return next();
};
