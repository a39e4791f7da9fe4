import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { BadRequest, ValidationFailed } from '../../shared/errors';
import { badText } from '../../shared/text';

const refused = new WeakSet<IncomingMessage>();

/**
 * A target Node's URL parser refuses (`GET http://a]b/v1/payments`) makes every read of ctx.path
 * throw, and Koa would answer a bare 500. `acceptTarget`, first of all, swaps it for `/`;
 * `refuseBadTarget`, after errorHandler, answers it 400 `bad-request`.
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
