import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { BadRequest, ValidationFailed } from '../../shared/errors';
import { badText } from '../../shared/text';

const refused = new WeakSet<IncomingMessage>();

/**
 * A request target that Node's URL parser refuses (an absolute-form target with an invalid host,
 * e.g. `GET http://a]b/v1/payments HTTP/1.1`) makes every read of ctx.path throw, before
 * errorHandler can render anything: Koa would answer a bare 500. `acceptTarget`, first of all,
 * swaps such a target for `/` so the HTTP frame works; `refuseBadTarget`, right after
 * errorHandler, answers it 400 `bad-request` through the one error renderer. Found by the
 * pipeline fuzz test.
 */
export const acceptTarget: Middleware = (ctx, next) => {
  try {
    void ctx.path;
  } catch {
    refused.add(ctx.req);
    ctx.req.url = '/';
  }
  return next();
};

export const refuseBadTarget: Middleware = (ctx, next) => {
  if (refused.has(ctx.req)) throw new BadRequest('bad-request', 'The request target is not a valid URL');
  // a NUL in a query value would reach Postgres, which refuses it: answer 400 here instead
  const bad = badText(ctx.query);
  if (bad?.problem === 'nul') throw new ValidationFailed(bad.path, `${bad.path} must not contain the NUL character`);
  return next();
};
