import { escapeHtml as h } from './html';
import type { Lang } from './i18n';

/**
 * The hosted checkout's frame, shared by its two methods (card: /checkout/{payment id}; payment
 * links: /pay/{link id}, which offers mobile money and hands cards over to the card page): the
 * Content-Security-Policy, the layout with its one stylesheet and one script (no inline script or
 * style, no web font, no third-party origin), the language switch. The web layer
 * (api/checkout) sends these pages with Cache-Control: no-store and no cookie.
 */

export const ASSETS_PATH = '/checkout/assets';

/**
 * Own scripts and styles only, and scripts from `scriptOrigins` (a card gateway's session.js); frames
 * from `frameOrigins` (the card connector's: a vault and acquirer, or a gateway) and 'self'; never framed.
 */
export function checkoutCsp(frameOrigins: readonly string[], scriptOrigins: readonly string[] = []): string {
  return [
    "default-src 'none'",
    `script-src 'self' ${scriptOrigins.join(' ')}`.trim(),
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `frame-src 'self' ${frameOrigins.join(' ')}`.trim(),
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * A page of the checkout: `bodyAttrs` become data-* attributes its script reads (state, status
 * URL, messages); `head` adds to <head> (a status page's no-script refresh).
 */
export function layout(lang: Lang, title: string, bodyAttrs: Record<string, string>, main: string, head = ''): string {
  const attrs = Object.entries(bodyAttrs)
    .map(([k, v]) => ` data-${k}="${h(v)}"`)
    .join('');
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${h(title)}</title><link rel="stylesheet" href="${ASSETS_PATH}/checkout.css">${head}</head>
<body${attrs}><main>
${main}
</main><script src="${ASSETS_PATH}/checkout.js"></script></body></html>`;
}

/** The link to the page in the other language (`?lang=`: the query wins over Accept-Language). */
export function langSwitch(lang: Lang, label: string): string {
  const other: Lang = lang === 'fr' ? 'en' : 'fr';
  return `<p class="lang"><a href="?lang=${other}" hreflang="${other}" lang="${other}">${h(label)}</a></p>`;
}

/** A final outcome, announced (role=status), in the card page's and the link page's words. */
export function outcomeSection(status: string, heading: string, text: string, extra = ''): string {
  return `<section class="outcome ${h(status)}" role="status" aria-live="polite"><h1 id="outcome">${h(heading)}</h1><p>${h(text)}</p>${extra}</section>`;
}
