import { escapeHtml as h, formatAmount } from '../../shared/checkout/html';
import { layout, langSwitch, outcomeSection } from '../../shared/checkout/frame';
import { charging, type CheckoutPayment } from '../../shared/cards/checkout';
import type { CardForm } from '../../shared/providers/cardConnector';
import { TEXT, type Lang } from '../../shared/checkout/i18n';

/** The card checkout's HTML for every state of a card payment, in the checkout's frame (shared/checkout). */

/** Where the client goes back to: return_url?payment_id={id}&status={status}. */
export function returnLink(p: CheckoutPayment): string {
  const url = new URL(p.return_url!);
  url.searchParams.set('payment_id', p.id);
  url.searchParams.set('status', p.status);
  return url.toString();
}

function summary(p: CheckoutPayment, lang: Lang): string {
  const t = TEXT[lang];
  return `<header>
${langSwitch(lang, t.otherLang)}
<p class="merchant">${t.payTo} <strong>${h(p.merchant_name)}</strong></p>
<p class="amount" id="amount">${formatAmount(p.amount_charged, p.currency)}</p>
${p.description ? `<p class="description">${h(p.description)}</p>` : ''}
<p class="reference">${t.reference} <span>${h(p.reference)}</span></p>
</header>`;
}

/**
 * The payment's page in its current state. `form`: what the payment's card connector says the
 * form needs (null: no card connector can take it now). `autoReturn`: the client just reached
 * the outcome here.
 */
export function checkoutPage(
  p: CheckoutPayment,
  lang: Lang,
  form: CardForm | null,
  autoReturn: boolean,
  accept = '',
): string {
  const t = TEXT[lang];
  const amount = formatAmount(p.amount_charged, p.currency);
  const base = { payment: p.id, lang, status: p.status, messages: JSON.stringify(t.messages) };
  const title = `${t.title} · ${p.merchant_name}`;
  if (p.status === 'pending' && !charging(p)) {
    if (!form)
      return layout(
        lang,
        title,
        { ...base, state: 'unavailable' },
        `${summary(p, lang)}<p role="alert">${t.unavailable}</p>`,
      );
    const error = p.checkout_error ? (t.messages[p.checkout_error as keyof typeof t.messages] ?? t.messages.card) : '';
    const submit = `<p id="pay-status" class="notice" role="status" aria-live="polite">${h(error)}</p>
<button type="submit" id="pay-button">${h(t.pay(amount))}</button>
</form>`;
    if (form.kind === 'vault-frame')
      return layout(
        lang,
        title,
        { ...base, state: 'form', 'vault-origin': form.vaultOrigin },
        `${summary(p, lang)}
<form id="pay-form" method="post" action="/checkout/${p.id}/pay" novalidate>
<iframe id="card-frame" src="${h(form.frameUrl)}" title="${t.cardFields}"></iframe>
${submit}`,
      );
    // a gateway's hosted session: its script (on its origin, allowed by the CSP) turns each field of
    // #card-fields into its own iframe; the page's inputs stay empty and read-only (never a card number here)
    return layout(
      lang,
      title,
      { ...form.data, ...base, state: 'hosted-session', session: form.sessionId, accept: accept.slice(0, 512) },
      `${summary(p, lang)}
<form id="pay-form" method="post" action="/checkout/${p.id}/pay" novalidate>
<div id="card-fields" role="group" aria-label="${t.cardFields}">
${hostedField('card-number', t.cardNumber)}
<div class="expiry">${hostedField('card-expiry-month', t.expiryMonth)}${hostedField('card-expiry-year', t.expiryYear)}</div>
${hostedField('card-security-code', t.securityCode)}
</div>
${submit}`,
      `<script src="${h(form.scriptUrl)}"></script>`,
    );
  }
  if (p.status === 'pending') {
    return layout(
      lang,
      title,
      { ...base, state: 'charging' },
      `${summary(p, lang)}<p id="pay-status" class="notice" role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${t.charging}</p>`,
    );
  }
  if (p.status === 'processing') {
    const challenge = p.challenge_url ?? '';
    return layout(
      lang,
      title,
      { ...base, state: 'challenge', 'acquirer-origin': challenge ? new URL(challenge).origin : '' },
      `${summary(p, lang)}
<h1>${t.challengeTitle}</h1>
<p>${t.challengeIntro}</p>
${
  challenge
    ? `<iframe id="challenge-frame" src="${h(challenge)}" title="${t.challengeFrame}"></iframe>
<p><a id="challenge-link" href="${h(challenge)}">${t.challengeFallback}</a></p>`
    : ''
}
<p id="pay-status" class="notice" role="status" aria-live="polite"></p>`,
    );
  }
  return outcomePage(p, lang, autoReturn);
}

function outcomePage(p: CheckoutPayment, lang: Lang, autoReturn: boolean): string {
  const t = TEXT[lang];
  let heading: string;
  let text: string;
  if (p.status === 'succeeded') [heading, text] = [t.succeeded, t.succeededText];
  else if (p.status === 'failed')
    [heading, text] = [
      t.failed,
      p.failure_code === 'card-declined' ||
      p.failure_code === 'authentication-failed' ||
      p.failure_code === 'insufficient-funds' ||
      p.failure_code === 'expired-card'
        ? t[p.failure_code]
        : t.failedText,
    ];
  else if (p.status === 'refunded') [heading, text] = [t.refunded, t.refundedText];
  else [heading, text] = [t.cancelled, t.cancelledText];
  const link = returnLink(p);
  return layout(
    lang,
    `${heading} · ${p.merchant_name}`,
    { payment: p.id, lang, status: p.status, state: 'final', ...(autoReturn ? { 'auto-return': link } : {}) },
    `${summary(p, lang)}
${outcomeSection(p.status, heading, text, autoReturn ? `<p>${t.redirecting}</p>` : '')}
<p><a id="return-link" class="button" href="${h(link)}">${h(t.back(p.merchant_name))}</a></p>`,
  );
}

/** A gateway's hosted field: an empty, read-only input its script replaces by an iframe of its own origin. */
function hostedField(id: string, label: string): string {
  return `<p class="field"><label for="${id}">${h(label)}</label><input id="${id}" readonly autocomplete="off"></p>`;
}

export function notFoundPage(lang: Lang): string {
  const t = TEXT[lang];
  return layout(lang, t.notFound, { state: 'not-found', lang }, `<h1>${t.notFound}</h1><p>${t.notFoundText}</p>`);
}

/** /checkout/{id}/3ds-return: tells the checkout page (its parent) to ask the server; alone, goes back to the checkout. */
export function threeDsReturnPage(id: string, lang: Lang): string {
  const t = TEXT[lang];
  return layout(
    lang,
    t.challengeTitle,
    { state: '3ds-return', payment: id, lang, checkout: `/checkout/${id}?lang=${lang}` },
    `<p role="status">${t.messages.processing}</p><p><a href="/checkout/${id}?lang=${lang}">${t.returnToCheckout}</a></p>`,
  );
}

export function noChallengePage(id: string, lang: Lang): string {
  const t = TEXT[lang];
  return layout(
    lang,
    t.challengeTitle,
    { state: 'no-challenge', lang },
    `<h1>${t.noChallenge}</h1><p><a href="/checkout/${id}?lang=${lang}">${t.returnToCheckout}</a></p>`,
  );
}
