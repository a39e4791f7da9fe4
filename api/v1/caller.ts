import type { Context } from 'koa';
import type { Caller } from '../../shared/caller';

/** The merchant and environment a /v1 route acts for (from the pipeline's key), with the request id. */
export function callerOf(ctx: Context): Caller {
  const auth = ctx.state.auth;
  if (!auth) throw new Error('a /v1 route ran without the merchant pipeline');
  return { merchantId: auth.merchantId, environment: auth.environment, requestId: ctx.state.requestId };
}
