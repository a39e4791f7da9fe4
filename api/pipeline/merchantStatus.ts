import type { Middleware } from 'koa';
import { Forbidden } from '../../shared/errors';

/** Step 5 (spec 5.6.5): the merchant must be active (status seen within CREDENTIAL_CACHE_MS). */
export const merchantStatus: Middleware = async (ctx, next) => {
  if (ctx.state.auth!.merchantStatus !== 'active') throw new Forbidden('merchant-suspended', 'The merchant account is suspended');
  return next();
};
