import { escapeHtml as h, formatAmount, maskPhone } from '../../shared/checkout/html';
import { langSwitch, layout, outcomeSection } from '../../shared/checkout/frame';
import { LINK_TEXT, type Lang } from '../../shared/checkout/i18n';
import { OPERATOR_PREFIXES } from '../../shared/msisdn';
import { OPERATORS, type Operator } from '../../shared/vocabulary';
import type { PaymentRow } from '../../shared/db/rows';
import type { PageLink } from '../../shared/links/service';

/**
 * The payment-link page (/pay/{link id}, docs/decisions.md#payment-links) in the checkout's frame: mobile money and
 * card as two forms of one page, each a plain POST that works without JavaScript; the attempt's
 * status page, which refreshes itself without JavaScript and is updated in place with it.
 */

/** What the client typed, shown back with an error. */
export interface FormValues {
  method?: string;
  phone?: string;
  operator?: string;
  amount?: string;
  name?: string;
  email?: string;
}

export interface FormState {
  tokens: { mobile_money: string; card: string };
  /** operators closed for collections now */
  closed: Set<Operator>;
  error?: { method: string | null; message: string; field?: string };
  values?: FormValues;
}

const amountText = (minor: number | null, currency: string) => (minor === null ? null : formatAmount(minor, currency));

function header(link: PageLink, lang: Lang): string {
  const t = LINK_TEXT[lang];
  return `<header>
${langSwitch(lang, t.otherLang)}
<p class="merchant">${t.payTo} <strong>${h(link.merchant_name)}</strong></p>
<p class="amount" id="amount">${link.amount !== null ? formatAmount(link.amount, link.currency) : h(t.openAmount)}</p>
<p class="description">${h(link.description)}</p>
</header>`;
}

const described = (id: string, hint: string, error: boolean) =>
  [hint ? `${id}-hint` : '', error ? 'form-error' : ''].filter(Boolean).join(' ');

function field(id: string, label: string, input: string, hint = ''): string {
  return `<label for="${id}">${h(label)}</label>${input}${hint ? `<p class="hint" id="${id}-hint">${h(hint)}</p>` : ''}`;
}

function amountField(link: PageLink, lang: Lang, prefix: string, value: string | undefined, invalid: boolean): string {
  if (link.amount !== null) return '';
  const t = LINK_TEXT[lang];
  const hint = t.amountHint(amountText(link.min_amount, link.currency), amountText(link.max_amount, link.currency));
  const id = `${prefix}-amount`;
  const aria = described(id, hint, invalid);
  return field(
    id,
    t.amountLabel(link.currency),
    `<input id="${id}" name="amount" inputmode="decimal" autocomplete="transaction-amount" required pattern="[0-9]+([.,][0-9]{1,2})?" value="${h(value ?? '')}"${aria ? ` aria-describedby="${aria}"` : ''}${invalid ? ' aria-invalid="true"' : ''}>`,
    hint,
  );
}

const hidden = (token: string, method: string, lang: Lang) =>
  `<input type="hidden" name="token" value="${h(token)}"><input type="hidden" name="method" value="${method}"><input type="hidden" name="lang" value="${lang}">`;

function mobileForm(link: PageLink, lang: Lang, s: FormState): string {
  const t = LINK_TEXT[lang];
  const mine = s.error?.method === 'mobile_money';
  const v = mine ? (s.values ?? {}) : {};
  const bad = (f: string) => mine && s.error?.field === f;
  const options = OPERATORS.map((op) => {
    const closed = s.closed.has(op);
    return `<option value="${op}"${closed ? ' disabled' : ''}${v.operator === op ? ' selected' : ''}>${h(t.operators[op])}${closed ? ` (${h(t.unavailable)})` : ''}</option>`;
  }).join('');
  const pay = link.amount !== null ? t.payMobile(formatAmount(link.amount, link.currency)) : t.payMobileOpen;
  const phoneAria = described('phone', t.phoneHint, bad('phone'));
  return `<form id="mm-form" class="method" method="post" action="/pay/${link.id}">
<h2>${h(t.mobileMoney)}</h2>
${hidden(s.tokens.mobile_money, 'mobile_money', lang)}
${amountField(link, lang, 'mm', v.amount, bad('amount'))}
${field('phone', t.phoneLabel, `<input id="phone" name="phone" type="tel" inputmode="tel" autocomplete="tel" required maxlength="32" value="${h(v.phone ?? '')}" aria-describedby="${phoneAria}"${bad('phone') ? ' aria-invalid="true"' : ''}>`, t.phoneHint)}
${field('operator', t.operatorLabel, `<select id="operator" name="operator"${bad('operator') ? ' aria-invalid="true" aria-describedby="form-error"' : ''}><option value="">${h(t.operatorAuto)}</option>${options}</select>`)}
<p id="operator-detected" class="hint" role="status" aria-live="polite"></p>
<button type="submit">${h(pay)}</button>
</form>`;
}

function cardForm(link: PageLink, lang: Lang, s: FormState): string {
  const t = LINK_TEXT[lang];
  const mine = s.error?.method === 'card';
  const v = mine ? (s.values ?? {}) : {};
  const bad = (f: string) => mine && s.error?.field === f;
  const invalid = (f: string) => (bad(f) ? ' aria-invalid="true" aria-describedby="form-error"' : '');
  return `<form id="card-form" class="method" method="post" action="/pay/${link.id}">
<h2>${h(t.card)}</h2>
${hidden(s.tokens.card, 'card', lang)}
${amountField(link, lang, 'card', v.amount, bad('amount'))}
${field('card-name', t.nameLabel, `<input id="card-name" name="name" autocomplete="name" required maxlength="200" value="${h(v.name ?? '')}"${invalid('name')}>`)}
${field('card-email', t.emailLabel, `<input id="card-email" name="email" type="email" autocomplete="email" required maxlength="254" value="${h(v.email ?? '')}"${invalid('email')}>`)}
<button type="submit">${h(t.payCard)}</button>
</form>`;
}

/** The link's page: its forms, with the error of the last submission if any. */
export function linkPage(link: PageLink, lang: Lang, s: FormState): string {
  const t = LINK_TEXT[lang];
  const prefixes = Object.fromEntries(OPERATORS.map((op) => [op, OPERATOR_PREFIXES[op]]));
  const names = Object.fromEntries(OPERATORS.map((op) => [op, t.detected(t.operators[op])]));
  const forms = [
    link.methods.includes('mobile_money') ? mobileForm(link, lang, s) : '',
    link.methods.includes('card') ? cardForm(link, lang, s) : '',
  ].join('\n');
  return layout(
    lang,
    `${t.title} · ${link.merchant_name}`,
    {
      state: 'link-form',
      lang,
      prefixes: JSON.stringify(prefixes),
      detected: JSON.stringify(names),
      closed: JSON.stringify([...s.closed]),
    },
    `${header(link, lang)}
<p id="form-error" class="notice error" role="alert">${s.error ? h(s.error.message) : ''}</p>
${forms}`,
  );
}

export function linkInactivePage(link: PageLink, lang: Lang, reason: 'deactivated' | 'expired' | 'used_up'): string {
  const t = LINK_TEXT[lang];
  return layout(
    lang,
    t.inactiveTitle,
    { state: 'link-inactive', lang },
    `${header(link, lang)}<h1>${h(t.inactiveTitle)}</h1><p>${h(t.inactive[reason])}</p>`,
  );
}

export function linkNotFoundPage(lang: Lang): string {
  const t = LINK_TEXT[lang];
  return layout(lang, t.notFound, { state: 'not-found', lang }, `<h1>${h(t.notFound)}</h1><p>${h(t.notFoundText)}</p>`);
}

/** Where the client goes back to after paying: the link's return_url with the payment's reference and status (never its id). */
export function linkReturn(link: PageLink, p: PaymentRow): string | null {
  if (!link.return_url) return null;
  const url = new URL(link.return_url);
  url.searchParams.set('payment_link', link.id);
  url.searchParams.set('reference', p.reference);
  url.searchParams.set('status', p.status);
  return url.toString();
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled', 'refunded']);

/** `28/11/2026 09:45 UTC` (fr) or `2026-11-28 09:45 UTC` (en). */
function dateText(unix: number, lang: Lang): string {
  const d = new Date(unix * 1000).toISOString();
  const [date, time] = [d.slice(0, 10), d.slice(11, 16)];
  return lang === 'fr'
    ? `${date.slice(8, 10)}/${date.slice(5, 7)}/${date.slice(0, 4)} ${time} UTC`
    : `${date} ${time} UTC`;
}

/**
 * An attempt's page: "Confirm on your phone" while the payment is open (refreshed every 3 s by
 * a meta refresh inside <noscript>; the script polls `statusUrl` and swaps <main> instead), the
 * receipt once it succeeded, the failure in plain words with "try again" otherwise. `p`
 * undefined: the creation is still under way.
 */
export function attemptPage(
  link: PageLink,
  lang: Lang,
  p: PaymentRow | undefined,
  urls: { self: string; statusUrl: string; retry: string },
): string {
  const t = LINK_TEXT[lang];
  const status = p?.status ?? 'creating';
  const attrs = {
    state: FINAL.has(status) ? 'attempt-final' : 'attempt-waiting',
    lang,
    status,
    'status-url': urls.statusUrl,
  };
  if (!p || !FINAL.has(p.status)) {
    const text = p?.phone ? t.confirmText(maskPhone(p.phone)) : t.preparing;
    return layout(
      lang,
      `${t.confirmTitle} · ${link.merchant_name}`,
      attrs,
      `${header(link, lang)}
<section class="waiting" role="status" aria-live="polite"><h1 id="outcome"><span class="spinner" aria-hidden="true"></span>${h(t.confirmTitle)}</h1>
${p ? `<p class="amount-due">${formatAmount(p.amount_charged, p.currency)}</p>` : ''}<p id="confirm-text">${h(text)}</p><p class="hint">${h(t.confirmWait)}</p></section>`,
      `<noscript><meta http-equiv="refresh" content="3"></noscript>`,
    );
  }
  if (p.status === 'succeeded' || p.status === 'refunded') {
    const back = linkReturn(link, p);
    const receipt = `<dl class="receipt">
<dt>${h(t.receiptAmount)}</dt><dd id="receipt-amount">${formatAmount(p.amount_charged, p.currency)}</dd>
<dt>${h(t.receiptDate)}</dt><dd id="receipt-date">${dateText(p.completed ?? p.created, lang)}</dd>
<dt>${h(t.receiptProvider)}</dt><dd id="receipt-provider-ref">${h(p.provider_ref ?? '—')}</dd>
<dt>${h(t.receiptReference)}</dt><dd id="receipt-reference">${h(p.reference)}</dd>
</dl>`;
    return layout(
      lang,
      `${t.succeeded} · ${link.merchant_name}`,
      attrs,
      `${header(link, lang)}
${outcomeSection('succeeded', t.succeeded, t.succeededText)}
${receipt}
${back ? `<p><a id="return-link" class="button" href="${h(back)}">${h(t.back(link.merchant_name))}</a></p>` : `<p>${h(t.closeText)}</p>`}`,
    );
  }
  const heading = p.status === 'cancelled' ? t.cancelled : t.failed;
  const why =
    p.status === 'cancelled'
      ? t.failures.cancelled
      : (t.failures[p.failure_code as keyof typeof t.failures] ?? t.failures.other);
  return layout(
    lang,
    `${heading} · ${link.merchant_name}`,
    attrs,
    `${header(link, lang)}
${outcomeSection(p.status, heading, why)}
<p><a id="try-again" class="button" href="${h(urls.retry)}">${h(t.tryAgain)}</a></p>`,
  );
}
