import { createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { ServiceContext } from '../../shared/context';
import { DomainError, TooManyRequests } from '../../shared/errors';
import { checkoutCsp } from '../../shared/checkout/frame';
import { parseAmount } from '../../shared/checkout/html';
import { LINK_TEXT, type Lang } from '../../shared/checkout/i18n';
import { lookupPhoneNumber, PhoneNumberProblem } from '../../shared/msisdn';
import { operatorAvailability } from '../../shared/availability/read';
import { OPERATORS, type Operator } from '../../shared/vocabulary';
import { attemptOf, attemptRef, checkFormToken, issueFormToken } from '../../shared/links/formToken';
import {
  attemptPayment,
  findPageLink,
  linkPayment,
  payThroughLink,
  type LinkPayment,
  type PageLink,
} from '../../shared/links/service';
import type { LinkMethod } from '../../shared/links/schemas';
import { inactiveReason } from '../../shared/links/view';
import { withTimeout } from '../../shared/timeout';
import { readRawBody } from '../body';
import { unavailable } from '../middleware/errors';
import { html, langOf } from './index';
import {
  attemptPage,
  linkInactivePage,
  linkNotFoundPage,
  linkPage,
  type FormState,
  type FormValues,
} from './linkPages';

/**
 * The payment-link page (issue 35, decisions.md "Payment links"), on the web process, outside
 * the merchant pipeline: the client's browser has no key. GET /pay/{id} shows the link's forms
 * (410 once it takes no payment); POST /pay/{id} creates the payment through the link (mobile
 * money: pushed, then the attempt's status page; card: handed over to the card checkout,
 * /checkout/{payment id}, as decisions.md "Cards" addresses it); GET /pay/{id}/attempts/{ref}
 * follows it. Same headers as the card checkout: CSP, no-store, no cookie.
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
const FORM_BODY_LIMIT = 4096;
const REDIS_TIMEOUT_MS = 2000;

type Limiter = (key: string) => Promise<void>;

function limiter(
  services: ServiceContext,
  name: string,
  points: number,
  duration: number,
  code: 'phone' | 'busy',
): Limiter {
  const redis = new RateLimiterRedis({
    storeClient: services.redis,
    keyPrefix: `${services.config.queuePrefix}:${name}`,
    points,
    duration,
    rejectIfRedisNotReady: true,
  });
  return async (key) => {
    try {
      await withTimeout(redis.consume(key), REDIS_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw new LimitHit(code, Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
      throw unavailable();
    }
  };
}

/** A page limit reached: answered 429 with the form and a message saying when to come back. */
class LimitHit extends TooManyRequests {
  constructor(
    readonly kind: 'phone' | 'busy',
    retryAfter: number,
  ) {
    super(
      'rate-limit-exceeded',
      kind === 'phone' ? 'Too many push prompts to this number' : 'Too many submissions',
      retryAfter,
    );
  }
}

/** A submission the page answers with its form again and a message. */
class FormProblem extends Error {
  constructor(
    readonly status: number,
    readonly field: string | undefined,
    readonly text: string,
  ) {
    super(text);
  }
}

const phoneKey = (msisdn: string) => createHash('sha256').update(`link-phone\n${msisdn}`).digest('hex');

export function linksRouter(services: ServiceContext): Router {
  const router = new Router({ prefix: '/pay' });
  const { config } = services;
  const perPhone = limiter(services, 'link-phone', PHONE_PROMPTS, PHONE_WINDOW_S, 'phone');
  const perIp = limiter(services, 'link-ip', SUBMITS_PER_IP, 60, 'busy');
  const perLink = limiter(services, 'link-submit', SUBMITS_PER_LINK, 60, 'busy');
  const serviceOrigin = () => new URL(config.baseUrl).origin;
  const csp = checkoutCsp([]);
  const page = (ctx: Context, status: number, body: string) => html(ctx, status, body, csp);

  async function closedOperators(link: PageLink): Promise<Set<Operator>> {
    const rows = await operatorAvailability(
      services.db,
      services.providers,
      link.environment,
      services.clock.now(),
      config.availability,
    );
    return new Set(rows.filter((r) => r.collection === 'closed').map((r) => r.operator));
  }

  /** The link's forms, each with a fresh token but `keep` (a submission refused before it made anything keeps its own). */
  async function formPage(
    ctx: Context,
    link: PageLink,
    lang: Lang,
    status: number,
    extra: Pick<FormState, 'error' | 'values'> & { keep?: { method: LinkMethod; token: string } } = {},
  ) {
    const now = services.clock.now();
    const tokens = {
      mobile_money: issueFormToken(config.secretsKeys, link.id, now),
      card: issueFormToken(config.secretsKeys, link.id, now),
    };
    if (extra.keep) tokens[extra.keep.method] = extra.keep.token;
    page(
      ctx,
      status,
      linkPage(link, lang, { closed: await closedOperators(link), error: extra.error, values: extra.values, tokens }),
    );
  }

  /** The link of the path, or the page saying it is unknown (404) or no longer takes payments (410). */
  async function activeLink(ctx: Context, lang: Lang): Promise<PageLink | undefined> {
    const link = await findPageLink(services.db, ctx.params.id);
    if (!link) return void page(ctx, 404, linkNotFoundPage(lang));
    const reason = inactiveReason(link, services.clock.now());
    if (reason) return void page(ctx, 410, linkInactivePage(link, lang, reason));
    return link;
  }

  router.get('/:id', async (ctx) => {
    const lang = langOf(ctx);
    const link = await activeLink(ctx, lang);
    if (link) await formPage(ctx, link, lang, 200);
  });

  router.post('/:id', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const raw = await readRawBody(ctx, FORM_BODY_LIMIT);
    const form = new URLSearchParams(ctx.is('application/x-www-form-urlencoded') ? raw.toString('utf8') : '');
    const lang: Lang = form.get('lang') === 'en' ? 'en' : form.get('lang') === 'fr' ? 'fr' : langOf(ctx);
    const t = LINK_TEXT[lang];
    const link = await activeLink(ctx, lang);
    if (!link) return;
    const method: LinkMethod = form.get('method') === 'card' ? 'card' : 'mobile_money';
    const values: FormValues = Object.fromEntries(
      ['phone', 'operator', 'amount', 'name', 'email'].map((k) => [k, form.get(k) ?? undefined]),
    );
    const token = form.get('token');
    const again = (status: number, message: string, field?: string, newToken = false) =>
      formPage(ctx, link, lang, status, {
        error: { method, message, field },
        values,
        keep: !newToken && token ? { method, token } : undefined,
      });
    // CSRF: the form's token is the service's, for this link, fresh; and a browser's word on where the POST comes
    // from must be ours (the page's no-referrer policy makes its own Origin `null`: Sec-Fetch-Site then tells)
    const origin = ctx.get('Origin');
    const site = ctx.get('Sec-Fetch-Site');
    if ((origin && origin !== 'null' && origin !== serviceOrigin()) || site === 'cross-site' || site === 'same-site')
      return again(403, t.errors.badForm, undefined, true);
    const checked = checkFormToken(config.secretsKeys, link.id, token, services.clock.now());
    if (!checked.ok)
      return again(
        checked.reason === 'expired' ? 400 : 403,
        checked.reason === 'expired' ? t.errors.expiredForm : t.errors.badForm,
        undefined,
        true,
      );
    try {
      await perIp(ctx.ip);
      await perLink(link.id);
      const input = readSubmission(link, method, values, lang);
      const { paymentId } = await payThroughLink(services, link, checked.attempt, input, {
        requestId: ctx.state.requestId,
        // without the merchant's return_url, the card checkout sends the client back to this attempt's receipt
        returnUrl:
          link.return_url ??
          `${config.baseUrl}/pay/${link.id}/attempts/${attemptRef(config.secretsKeys, link.id, checked.attempt)}`,
        beforeCreate: input.phone ? () => perPhone(phoneKey(input.phone!)) : undefined,
      });
      ctx.status = 303;
      // a card is paid on the card checkout, which decisions.md addresses by the payment's id
      ctx.redirect(
        method === 'card'
          ? `/checkout/${paymentId}?lang=${lang}`
          : `/pay/${link.id}/attempts/${attemptRef(config.secretsKeys, link.id, checked.attempt)}?lang=${lang}`,
      );
    } catch (err) {
      if (err instanceof FormProblem) return again(err.status, err.text, err.field);
      if (err instanceof LimitHit) {
        ctx.set('Retry-After', String(err.retryAfter));
        const minutes = Math.max(1, Math.ceil(err.retryAfter! / 60));
        return again(429, err.kind === 'phone' ? t.errors.phoneLimit(minutes) : t.errors.busy(minutes));
      }
      if (err instanceof DomainError) {
        if (err.code === 'link-inactive')
          return void page(
            ctx,
            410,
            linkInactivePage(link, lang, inactiveReason(link, services.clock.now()) ?? 'used_up'),
          );
        if (err.code === 'operator-unavailable') return again(422, t.errors.operatorClosed, 'operator');
        if (err.code === 'method-unavailable') return again(422, t.errors.methodUnavailable);
        if (err.code === 'operator-mismatch') return again(400, t.errors.operatorMismatch, 'operator');
        if (err.code === 'amount-over-limit') return again(422, t.errors.amountLimit, 'amount');
        if (err.code === 'validation-failed' && err.param === 'amount')
          return again(400, link.amount === null ? t.errors.amountBounds : t.errors.amount, 'amount');
        if (err.code === 'validation-failed' && err.param === 'method') return again(400, t.errors.method);
        if (err.code === 'service-unavailable' || err.code === 'maintenance') return again(503, t.errors.unavailable);
        if (err.code === 'idempotency-in-progress') return again(409, t.errors.other);
      }
      throw err;
    }
  });

  /** The submission as a payment through the link, or the FormProblem to show. */
  function readSubmission(link: PageLink, method: 'mobile_money' | 'card', v: FormValues, lang: Lang): LinkPayment {
    const t = LINK_TEXT[lang];
    let amount: number | undefined;
    if (link.amount === null) {
      const parsed = parseAmount(v.amount);
      if (parsed === null) throw new FormProblem(400, 'amount', t.errors.amount);
      amount = parsed;
    }
    if (method === 'card') {
      const name = (v.name ?? '').trim();
      const email = (v.email ?? '').trim();
      if (!name || name.length > 200) throw new FormProblem(400, 'name', t.errors.name);
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254)
        throw new FormProblem(400, 'email', t.errors.email);
      return { method, amount, customer_name: name, customer_email: email };
    }
    let msisdn: string;
    let detected: Operator;
    try {
      ({ msisdn, operator: detected } = lookupPhoneNumber(v.phone ?? ''));
    } catch (err) {
      if (err instanceof PhoneNumberProblem) throw new FormProblem(400, 'phone', t.errors.phone);
      throw err;
    }
    const chosen = v.operator ?? '';
    if (chosen !== '' && !(OPERATORS as readonly string[]).includes(chosen))
      throw new FormProblem(400, 'operator', t.errors.operator);
    return { method, amount, phone: msisdn, operator: (chosen || detected) as Operator };
  }

  async function attemptOfPath(ctx: Context, lang: Lang): Promise<{ link: PageLink; attempt: string } | undefined> {
    const link = await findPageLink(services.db, ctx.params.id);
    const attempt = link && attemptOf(config.secretsKeys, link.id, ctx.params.ref);
    if (!link || !attempt) return void page(ctx, 404, linkNotFoundPage(lang));
    return { link, attempt };
  }

  router.get('/:id/attempts/:ref', async (ctx) => {
    const lang = langOf(ctx);
    const found = await attemptOfPath(ctx, lang);
    if (!found) return;
    const paymentId = await attemptPayment(services.db, found.link, found.attempt, config, services.clock.now());
    if (paymentId === null) return page(ctx, 404, linkNotFoundPage(lang));
    const p = paymentId === 'pending' ? undefined : await linkPayment(services.db, found.link, paymentId);
    const self = `/pay/${found.link.id}/attempts/${ctx.params.ref}`;
    page(
      ctx,
      200,
      attemptPage(found.link, lang, p, {
        self,
        statusUrl: `${self}/status`,
        retry: `/pay/${found.link.id}?lang=${lang}`,
      }),
    );
  });

  router.get('/:id/attempts/:ref/status', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const found = await attemptOfPath(ctx, langOf(ctx));
    if (!found) return;
    const paymentId = await attemptPayment(services.db, found.link, found.attempt, config, services.clock.now());
    const p = paymentId && paymentId !== 'pending' ? await linkPayment(services.db, found.link, paymentId) : undefined;
    ctx.body = { status: p?.status ?? 'creating' };
  });
  return router;
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
