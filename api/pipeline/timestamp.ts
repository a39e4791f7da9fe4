import type { Middleware } from 'koa';
import { SIGNED_METHODS } from './request';
import { unauthorized } from './unauthorized';

/** Spec 8: +/- 5 minutes. */
export const TIMESTAMP_TOLERANCE_S = 300;
const UNIX_SECONDS = /^\d{1,12}$/;

/** True when `raw` is an integer number of Unix seconds strictly within the tolerance of `nowS`. */
export function timestampFresh(raw: string, nowS: number): boolean {
  return UNIX_SECONDS.test(raw) && Math.abs(nowS - Number(raw)) < TIMESTAMP_TOLERANCE_S;
}

/** Step 7 (spec 5.6.7): X-Timestamp on signed methods; missing, not an integer, or |now - ts| >= 300 s → 401 timestamp-expired. */
export const timestamp: Middleware = async (ctx, next) => {
  // the merchant signs with its wall clock, so freshness is judged against the wall clock
  if (SIGNED_METHODS.has(ctx.method) && !timestampFresh(ctx.get('X-Timestamp'), Math.floor(Date.now() / 1000))) {
    throw unauthorized('timestamp-expired');
  }
  return next();
};
