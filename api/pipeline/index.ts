import type { Middleware } from 'koa';
import compose from 'koa-compose';
import type { ServiceContext } from '../../shared/context';
import { bearer } from './bearer';
import { contentLength } from './contentLength';
import { idempotency } from './idempotency';
import { ipAllowlist, merchantStatus, scope } from './access';
import { json } from './json';
import { rateLimit } from './rateLimit';
import { replayGuard } from './replay';
import { signed } from './signed';
import { uniform401 } from './unauthorized';

/**
 * The merchant request pipeline: every /v1 request passes these steps, in this order, before any
 * route runs (docs/decisions.md#merchant-pipeline). A step that refuses throws a domain error (shared/errors.ts); errorHandler renders it.
 *
 *   1. contentLength   413 above 500 MB, before any body byte is read
 *   2-3. bearer        401 auth-required / api-key-invalid; fills ctx.state.auth
 *   4. ipAllowlist     403 ip-not-allowed
 *   5. merchantStatus  403 merchant-suspended
 *   6. rateLimit       429 rate-limit-exceeded (Redis, shared by every web process)
 *   7-8. signed        401 timestamp-expired, exact bytes (413 above the route's limit),
 *                      401 signature-invalid (signed methods)
 *      scope           403 insufficient-scope (scopeAllows)
 *      json            415 unsupported-media-type / 400 invalid-json; fills ctx.state.body
 *      replayGuard     a signed POST whose signature was accepted before, with no key or another
 *                      key than its first use: 409 request-replayed
 *   9. idempotency     POST /v1/payments and /v1/payouts (required), a refund (optional):
 *                      409 idempotency-conflict / idempotency-in-progress, or the stored answer
 *  10. the route
 */
export function merchantPipeline(services: ServiceContext): Middleware {
  return compose([
    uniform401,
    contentLength,
    bearer(services),
    ipAllowlist,
    merchantStatus,
    rateLimit(services),
    signed,
    scope,
    json,
    replayGuard,
    idempotency,
  ]);
}
