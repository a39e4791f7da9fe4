import { readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { acceptSource, challengeReturned, charging, findCheckout } from '../../shared/cards/checkout';
import type { CardForm } from '../../shared/providers/cardConnector';
import { ProviderError } from '../../shared/providers/errors';
import type { ServiceContext } from '../../shared/context';
import { BadRequest, Forbidden, NotFound, TooManyRequests, Unprocessable, ValidationFailed } from '../../shared/errors';
import { withTimeout } from '../../shared/timeout';
import { parseJson, readRawBody, requireJsonContentType } from '../body';
import { unavailable } from '../middleware/errors';
import { pickLang, type Lang } from '../../shared/checkout/i18n';
import { checkoutCsp } from '../../shared/checkout/frame';
import { checkoutPage, noChallengePage, notFoundPage, returnLink, threeDsReturnPage } from './pages';
import { challengeCsp, challengeDocument, readBrowser } from './challenge';
import { lastAttempt } from '../../shared/cards/attempts';
import { withTraceparent } from '../../shared/tracing/spans';

/**
 * The hosted card checkout (docs/decisions.md#cards-hosted-checkout), outside the merchant pipeline: the client's
 * browser has no key. Headers: securityHeaders (docs/decisions.md#http-frame-and-operator-api), the CSP below, no-store, no cookie.
 */

/** docs/decisions.md#cards-hosted-checkout: POST /checkout/{id}/pay is limited to 10 a minute per client IP. */
export const PAY_LIMIT_PER_MINUTE = 10;
const REDIS_TIMEOUT_MS = 2000;

const asset = (name: string) => readFileSync(path.join(__dirname, 'assets', name));
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'checkout.js': { type: 'text/javascript; charset=utf-8', body: asset('checkout.js') },
  'checkout.css': { type: 'text/css; charset=utf-8', body: asset('checkout.css') },
};

export function html(ctx: Context, status: number, body: string, csp?: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  if (csp) ctx.set('Content-Security-Policy', csp);
  ctx.body = body;
}

export const langOf = (ctx: Context): Lang => pickLang(ctx.query.lang, ctx.get('Accept-Language'));

function payLimiter(services: ServiceContext) {
  const redis = new RateLimiterRedis({
    storeClient: services.redis,
    keyPrefix: `${services.config.queuePrefix}:checkout-pay`,
    points: PAY_LIMIT_PER_MINUTE,
    duration: 60,
    rejectIfRedisNotReady: true,
  });
  return async (ip: string) => {
    try {
      await withTimeout(redis.consume(ip), REDIS_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        throw new TooManyRequests(
          'rate-limit-exceeded',
          `At most ${PAY_LIMIT_PER_MINUTE} payment attempts a minute`,
          Math.max(1, Math.ceil(err.msBeforeNext / 1000)),
        );
      }
      throw unavailable();
    }
  };
}

export function checkoutRouter(services: ServiceContext): Router {
  const router = new Router({ prefix: '/checkout' });
  const limit = payLimiter(services);
  const serviceOrigin = () => new URL(services.config.baseUrl).origin;

  router.get('/assets/:name', (ctx) => {
    const a = ASSETS[ctx.params.name];
    if (!a) return html(ctx, 404, notFoundPage(langOf(ctx)), checkoutCsp([]));
    ctx.type = a.type;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = a.body;
  });

  router.get('/:id', async (ctx) => {
    const lang = langOf(ctx);
    const p = await findCheckout(services.db, ctx.params.id);
    if (!p) return html(ctx, 404, notFoundPage(lang), checkoutCsp([]));
    // the payment's card connector says which origins the page uses, and what its form needs
    const connector = services.providers.card(p.provider);
    let form: CardForm | null = null;
    if (connector && p.status === 'pending' && !charging(p)) {
      try {
        form = await connector.cardForm({
          paymentId: p.id,
          amount: p.amount_charged,
          currency: p.currency,
          description: p.description,
          lang,
        });
      } catch (err) {
        // the connector cannot take a card now (a gateway unreachable): the page says so, the client may reload
        if (!(err instanceof ProviderError)) throw err;
        ctx.state.log?.warn({ payment: p.id, code: err.code }, 'card form not prepared');
      }
    }
    const origins = connector?.origins ?? { frames: [], scripts: [] };
    html(
      ctx,
      200,
      checkoutPage(p, lang, form, ctx.query.from === 'pay', ctx.get('Accept')),
      checkoutCsp(origins.frames, origins.scripts),
    );
  });

  router.get('/:id/status', async (ctx) => {
    const p = await findCheckout(services.db, ctx.params.id);
    ctx.set('Cache-Control', 'no-store');
    if (!p) throw new NotFound('Payment');
    const final = p.status !== 'pending' && p.status !== 'processing';
    ctx.body = {
      status: p.status,
      charging: charging(p),
      challenge: p.status === 'processing' && p.challenge_url !== null,
      checkout_error: p.status === 'pending' && !charging(p) ? p.checkout_error : null,
      failure_code: p.failure_code,
      return_url: final ? returnLink(p) : null,
    };
  });

  router.post('/:id/pay', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    // the checkout page posts from its own origin; a browser always names the origin of a POST
    const origin = ctx.get('Origin');
    if (origin && origin !== serviceOrigin())
      throw new Forbidden('origin-not-allowed', 'Payments are posted by the checkout page only');
    const p = await findCheckout(services.db, ctx.params.id);
    if (!p) throw new NotFound('Payment');
    await limit(ctx.ip);
    const raw = await readRawBody(ctx, 4096);
    requireJsonContentType(ctx);
    const body = parseJson(raw) as Record<string, unknown> | null;
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new BadRequest('invalid-json', 'The body must be a JSON object');
    const connector = services.providers.card(p.provider);
    if (!connector) throw new Unprocessable('method-unavailable', 'No card connector can take this payment now');
    // the one field the connector's page posts: its payment source (a vault token, a gateway session id)
    const { field, pattern, description } = connector.source;
    const extra = Object.keys(body).find((k) => k !== field && !(k === 'browser' && connector.source.browser));
    if (extra) throw new ValidationFailed(extra, `${extra} is not allowed`);
    const source = body[field];
    if (typeof source !== 'string' || !pattern.test(source))
      throw new ValidationFailed(field, `${field} must be ${description}`);
    // the payer's browser for EMV 3-D Secure: what the page read, with what its request says (never a card detail)
    const browser = connector.source.browser ? readBrowser(body.browser, ctx.get('User-Agent'), ctx.ip) : null;
    // the client's payment joins the trace the merchant created it in
    await withTraceparent(p.traceparent, () =>
      acceptSource(
        { db: services.db, outbox: services.outbox, log: ctx.state.log, clock: services.clock },
        p.id,
        source,
        services.clock.now(),
        ctx.state.requestId,
        browser,
      ),
    );
    ctx.status = 202;
    ctx.body = { status: 'pending', charging: true };
  });

  // the issuer's (or gateway's) page sends the client back here, by a link (GET) or a form post
  // (POST, the gateway's redirectResponseUrl): whatever it posts is never read; the card
  // connector's ask re-reads the authentication from the gateway
  const returned: Middleware = async (ctx) => {
    const lang = langOf(ctx);
    const id = ctx.params.id;
    const p = await findCheckout(services.db, id);
    if (!p) return html(ctx, 404, notFoundPage(lang));
    if (!(await challengeReturned(services.db, p, services.clock.now())))
      return html(ctx, 409, noChallengePage(id, lang));
    html(ctx, 200, threeDsReturnPage(id, lang));
  };
  router.get('/:id/3ds-return', returned);
  router.post('/:id/3ds-return', returned);

  // a gateway's 3-D Secure redirect HTML, kept by the charge job, as a page of the service's own
  // origin that the checkout's challenge frame loads (or the client opens, where framing fails)
  router.get('/:id/3ds-challenge', async (ctx) => {
    const lang = langOf(ctx);
    const p = await findCheckout(services.db, ctx.params.id);
    if (!p) return html(ctx, 404, notFoundPage(lang), checkoutCsp([]));
    const attempt = p.status === 'processing' ? await lastAttempt(services.db, p.id) : undefined;
    const connector = services.providers.card(p.provider);
    if (!attempt?.challenge_html || !connector) return html(ctx, 409, noChallengePage(p.id, lang), checkoutCsp([]));
    html(
      ctx,
      200,
      challengeDocument(attempt.challenge_html, lang),
      challengeCsp(attempt.challenge_html, connector.origins.frames),
    );
  });
  return router;
}

/** The checkout's routes; any other /checkout path gets the 404 page, never a 500 or a JSON body. */
export function checkoutRoutes(router: Router): Middleware {
  const routes = router.routes() as Middleware;
  return async (ctx, next) => {
    if (ctx.path !== '/checkout' && !ctx.path.startsWith('/checkout/')) return next();
    await routes(ctx, async () => undefined);
    if (ctx.status === 404 && ctx.body === undefined) html(ctx, 404, notFoundPage(langOf(ctx)), checkoutCsp([]));
  };
}
