import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { ServiceContext } from '../../shared/context';
import { checkoutCsp } from '../../shared/checkout/frame';
import type { Lang } from '../../shared/checkout/i18n';
import { attemptOf } from '../../shared/links/formToken';
import { attemptPayment, findPageLink, linkPayment, type PageLink } from '../../shared/links/service';
import { html, langOf } from './index';
import { limiter, showForm, submitForm, type LinkPages } from './linkForm';
import { attemptPage, linkNotFoundPage } from './linkPages';

/**
 * The payment-link page (docs/decisions.md#payment-links), on the web process, outside
 * the merchant pipeline: the client's browser has no key. GET /pay/{id} shows the link's forms
 * (410 once it takes no payment); POST /pay/{id} creates the payment through the link (mobile
 * money: pushed, then the attempt's status page; card: handed over to the card checkout,
 * /checkout/{payment id}, as docs/decisions.md#cards-hosted-checkout addresses it); GET /pay/{id}/attempts/{ref}
 * follows it. Same headers as the card checkout: CSP, no-store, no cookie. The form and its
 * submission: ./linkForm.ts; the HTML: ./linkPages.ts.
 *
 * Abuse (a link is public): at most PHONE_PROMPTS push prompts per phone number per 10 minutes
 * across the service (every link, every process: Redis), SUBMITS_PER_IP a minute per client IP
 * and SUBMITS_PER_LINK a minute per link; the form posts a signed token (CSRF, and the
 * attempt's idempotency key: shared/links/formToken.ts) and the Origin, when sent, must be ours.
 */

export const PHONE_PROMPTS = 3;
export const PHONE_WINDOW_S = 600;
// generous: operators put many phones behind one address (carrier-grade NAT); the per-phone limit is the one that stops spam
export const SUBMITS_PER_IP = 20;
export const SUBMITS_PER_LINK = 60;

export function linksRouter(services: ServiceContext): Router {
  const csp = checkoutCsp([]);
  const pages: LinkPages = {
    services,
    page: (ctx, status, body) => html(ctx, status, body, csp),
    perPhone: limiter(services, 'link-phone', PHONE_PROMPTS, PHONE_WINDOW_S, 'phone'),
    perIp: limiter(services, 'link-ip', SUBMITS_PER_IP, 60, 'busy'),
    perLink: limiter(services, 'link-submit', SUBMITS_PER_LINK, 60, 'busy'),
  };
  const router = new Router({ prefix: '/pay' });
  router.get('/:id', (ctx) => showForm(pages, ctx));
  router.post('/:id', (ctx) => submitForm(pages, ctx));
  router.get('/:id/attempts/:ref', (ctx) => showAttempt(pages, ctx));
  router.get('/:id/attempts/:ref/status', (ctx) => attemptStatus(pages, ctx));
  return router;
}

/** The link and attempt of the path, or the 404 page. */
async function attemptOfPath(
  pages: LinkPages,
  ctx: Context,
  lang: Lang,
): Promise<{ link: PageLink; attempt: string } | undefined> {
  const link = await findPageLink(pages.services.db, ctx.params.id);
  const attempt = link && attemptOf(pages.services.config.secretsKeys, link.id, ctx.params.ref);
  if (!link || !attempt) return void pages.page(ctx, 404, linkNotFoundPage(lang));
  return { link, attempt };
}

/** GET /pay/{id}/attempts/{ref}: the attempt's payment, followed until it is final. */
async function showAttempt(pages: LinkPages, ctx: Context): Promise<void> {
  const { db, config, clock } = pages.services;
  const lang = langOf(ctx);
  const found = await attemptOfPath(pages, ctx, lang);
  if (!found) return;
  const paymentId = await attemptPayment(db, found.link, found.attempt, config, clock.now());
  if (paymentId === null) return pages.page(ctx, 404, linkNotFoundPage(lang));
  const p = paymentId === 'pending' ? undefined : await linkPayment(db, found.link, paymentId);
  const self = `/pay/${found.link.id}/attempts/${ctx.params.ref}`;
  pages.page(
    ctx,
    200,
    attemptPage(found.link, lang, p, {
      self,
      statusUrl: `${self}/status`,
      retry: `/pay/${found.link.id}?lang=${lang}`,
    }),
  );
}

/** GET /pay/{id}/attempts/{ref}/status: the payment's status for the attempt page's script. */
async function attemptStatus(pages: LinkPages, ctx: Context): Promise<void> {
  const { db, config, clock } = pages.services;
  ctx.set('Cache-Control', 'no-store');
  const found = await attemptOfPath(pages, ctx, langOf(ctx));
  if (!found) return;
  const paymentId = await attemptPayment(db, found.link, found.attempt, config, clock.now());
  const p = paymentId && paymentId !== 'pending' ? await linkPayment(db, found.link, paymentId) : undefined;
  ctx.body = { status: p?.status ?? 'creating' };
}

/** The link pages' routes; any other /pay path gets the 404 page. */
export function linkRoutes(router: Router): Middleware {
  const routes = router.routes() as Middleware;
  return async (ctx, next) => {
    if (ctx.path !== '/pay' && !ctx.path.startsWith('/pay/')) return next();
    await routes(ctx, async () => undefined);
    if (ctx.status === 404 && ctx.body === undefined) html(ctx, 404, linkNotFoundPage(langOf(ctx)), checkoutCsp([]));
  };
}
