import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { ServiceContext } from '../../shared/context';
import { DomainError, TooManyRequests } from '../../shared/errors';
import { parseAmount } from '../../shared/checkout/html';
import { LINK_TEXT, type Lang } from '../../shared/checkout/i18n';
import { lookupPhoneNumber, PhoneNumberProblem } from '../../shared/msisdn';
import { operatorAvailability } from '../../shared/availability/read';
import { OPERATORS, type Operator } from '../../shared/vocabulary';
import { attemptRef, checkFormToken, issueFormToken } from '../../shared/links/formToken';
import { findPageLink, payThroughLink, type LinkPayment, type PageLink } from '../../shared/links/service';
import type { LinkMethod } from '../../shared/links/schemas';
import { inactiveReason } from '../../shared/links/view';
import { withTimeout } from '../../shared/timeout';
import { readRawBody } from '../body';
import { unavailable } from '../middleware/errors';
import { langOf } from './index';
import { linkInactivePage, linkNotFoundPage, linkPage, type FormState, type FormValues } from './linkPages';

/**
 * The payment-link page's form (api/checkout/links.ts routes it): GET /pay/{id} shows it, POST
 * /pay/{id} takes a submission, creates the payment through the link and sends the client on, or
 * answers the form again with a message.
 */

const FORM_BODY_LIMIT = 4096;
const REDIS_TIMEOUT_MS = 2000;

type Limiter = (key: string) => Promise<void>;

/** What the link pages share: the service, the page's answer (its CSP), the submission limits. */
export interface LinkPages {
  services: ServiceContext;
  page: (ctx: Context, status: number, body: string) => void;
  perPhone: Limiter;
  perIp: Limiter;
  perLink: Limiter;
}

/** A limit of the page counted in Redis across every process; refused: LimitHit, Redis unreachable: 503. */
export function limiter(
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

/** What the form says again after a refused submission: its status, message and field. */
interface Refusal {
  status: number;
  message: string;
  field?: string;
}

async function closedOperators({ services }: LinkPages, link: PageLink): Promise<Set<Operator>> {
  const rows = await operatorAvailability(
    services.db,
    services.providers,
    link.environment,
    services.clock.now(),
    services.config.availability,
  );
  return new Set(rows.filter((r) => r.collection === 'closed').map((r) => r.operator));
}

/** The link's forms, each with a fresh token but `keep` (a submission refused before it made anything keeps its own). */
async function formPage(
  pages: LinkPages,
  ctx: Context,
  link: PageLink,
  lang: Lang,
  status: number,
  extra: Pick<FormState, 'error' | 'values'> & { keep?: { method: LinkMethod; token: string } } = {},
) {
  const { config, clock } = pages.services;
  const now = clock.now();
  const tokens = {
    mobile_money: issueFormToken(config.secretsKeys, link.id, now),
    card: issueFormToken(config.secretsKeys, link.id, now),
  };
  if (extra.keep) tokens[extra.keep.method] = extra.keep.token;
  pages.page(
    ctx,
    status,
    linkPage(link, lang, {
      closed: await closedOperators(pages, link),
      error: extra.error,
      values: extra.values,
      tokens,
    }),
  );
}

/** The link of the path, or the page saying it is unknown (404) or no longer takes payments (410). */
async function activeLink(pages: LinkPages, ctx: Context, lang: Lang): Promise<PageLink | undefined> {
  const link = await findPageLink(pages.services.db, ctx.params.id);
  if (!link) return void pages.page(ctx, 404, linkNotFoundPage(lang));
  const reason = inactiveReason(link, pages.services.clock.now());
  if (reason) return void pages.page(ctx, 410, linkInactivePage(link, lang, reason));
  return link;
}

/** GET /pay/{id}: the link's forms. */
export async function showForm(pages: LinkPages, ctx: Context): Promise<void> {
  const lang = langOf(ctx);
  const link = await activeLink(pages, ctx, lang);
  if (link) await formPage(pages, ctx, link, lang, 200);
}

/**
 * POST /pay/{id}: a submission of one of the forms. A payment made: 303 to the attempt's status
 * page (mobile money) or to the card checkout. Refused: the form again, with its status and message.
 */
export async function submitForm(pages: LinkPages, ctx: Context): Promise<void> {
  const { config, clock } = pages.services;
  ctx.set('Cache-Control', 'no-store');
  const raw = await readRawBody(ctx, FORM_BODY_LIMIT);
  const form = new URLSearchParams(ctx.is('application/x-www-form-urlencoded') ? raw.toString('utf8') : '');
  const lang: Lang = form.get('lang') === 'en' ? 'en' : form.get('lang') === 'fr' ? 'fr' : langOf(ctx);
  const t = LINK_TEXT[lang];
  const link = await activeLink(pages, ctx, lang);
  if (!link) return;
  const method: LinkMethod = form.get('method') === 'card' ? 'card' : 'mobile_money';
  const values: FormValues = Object.fromEntries(
    ['phone', 'operator', 'amount', 'name', 'email'].map((k) => [k, form.get(k) ?? undefined]),
  );
  const token = form.get('token');
  const again = (status: number, message: string, field?: string, newToken = false) =>
    formPage(pages, ctx, link, lang, status, {
      error: { method, message, field },
      values,
      keep: !newToken && token ? { method, token } : undefined,
    });
  if (crossSite(ctx, config.baseUrl)) return again(403, t.errors.badForm, undefined, true);
  const checked = checkFormToken(config.secretsKeys, link.id, token, clock.now());
  if (!checked.ok)
    return again(
      checked.reason === 'expired' ? 400 : 403,
      checked.reason === 'expired' ? t.errors.expiredForm : t.errors.badForm,
      undefined,
      true,
    );
  try {
    await pages.perIp(ctx.ip);
    await pages.perLink(link.id);
    const input = readSubmission(link, method, values, lang);
    const attempt = `/pay/${link.id}/attempts/${attemptRef(config.secretsKeys, link.id, checked.attempt)}`;
    const { paymentId } = await payThroughLink(pages.services, link, checked.attempt, input, {
      requestId: ctx.state.requestId,
      // without the merchant's return_url, the card checkout sends the client back to this attempt's receipt
      returnUrl: link.return_url ?? `${config.baseUrl}${attempt}`,
      beforeCreate: input.phone ? () => pages.perPhone(phoneKey(input.phone!)) : undefined,
    });
    ctx.status = 303;
    // a card is paid on the card checkout, which docs/decisions.md#payment-links addresses by the payment's id
    ctx.redirect(method === 'card' ? `/checkout/${paymentId}?lang=${lang}` : `${attempt}?lang=${lang}`);
  } catch (err) {
    if (err instanceof DomainError && err.code === 'link-inactive')
      return void pages.page(ctx, 410, linkInactivePage(link, lang, inactiveReason(link, clock.now()) ?? 'used_up'));
    if (err instanceof LimitHit) ctx.set('Retry-After', String(err.retryAfter));
    const refusal = refusalOf(err, link, lang);
    if (!refusal) throw err;
    return again(refusal.status, refusal.message, refusal.field);
  }
}

/**
 * CSRF, with the form's token: a browser's word on where the POST comes from must be ours (the
 * page's no-referrer policy makes its own Origin `null`: Sec-Fetch-Site then tells).
 */
function crossSite(ctx: Context, baseUrl: string): boolean {
  const origin = ctx.get('Origin');
  const site = ctx.get('Sec-Fetch-Site');
  return (
    (!!origin && origin !== 'null' && origin !== new URL(baseUrl).origin) ||
    site === 'cross-site' ||
    site === 'same-site'
  );
}

const phoneKey = (msisdn: string) => createHash('sha256').update(`link-phone\n${msisdn}`).digest('hex');

/** What the form says of an error the submission met; undefined: not the form's to answer. */
function refusalOf(err: unknown, link: PageLink, lang: Lang): Refusal | undefined {
  const t = LINK_TEXT[lang];
  if (err instanceof FormProblem) return { status: err.status, message: err.text, field: err.field };
  if (err instanceof LimitHit) {
    const minutes = Math.max(1, Math.ceil(err.retryAfter! / 60));
    return { status: 429, message: err.kind === 'phone' ? t.errors.phoneLimit(minutes) : t.errors.busy(minutes) };
  }
  if (!(err instanceof DomainError)) return undefined;
  if (err.code === 'operator-unavailable') return { status: 422, message: t.errors.operatorClosed, field: 'operator' };
  if (err.code === 'method-unavailable') return { status: 422, message: t.errors.methodUnavailable };
  if (err.code === 'operator-mismatch') return { status: 400, message: t.errors.operatorMismatch, field: 'operator' };
  if (err.code === 'amount-over-limit') return { status: 422, message: t.errors.amountLimit, field: 'amount' };
  if (err.code === 'validation-failed' && err.param === 'amount')
    return { status: 400, message: link.amount === null ? t.errors.amountBounds : t.errors.amount, field: 'amount' };
  if (err.code === 'validation-failed' && err.param === 'method') return { status: 400, message: t.errors.method };
  if (err.code === 'service-unavailable' || err.code === 'maintenance')
    return { status: 503, message: t.errors.unavailable };
  if (err.code === 'idempotency-in-progress') return { status: 409, message: t.errors.other };
  return undefined;
}

/** The submission as a payment through the link, or the FormProblem to show. */
function readSubmission(link: PageLink, method: LinkMethod, v: FormValues, lang: Lang): LinkPayment {
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
