import { createHash } from 'node:crypto';
import type { BrowserInfo } from '../../shared/providers/cardConnector';
import { ValidationFailed } from '../../shared/errors';
import { escapeHtml as h } from '../../shared/checkout/html';
import { TEXT, type Lang } from '../../shared/checkout/i18n';

/**
 * A gateway's EMV 3-D Secure on the checkout (docs/decisions.md#cards-hosted-checkout): the
 * browser details its page posts with the session id, and the gateway's redirect HTML served as a
 * page of the service's own origin (/checkout/{id}/3ds-challenge), which the checkout's challenge
 * frame loads. That HTML came from the gateway, server to server; its page may run its own inline
 * scripts (by their hash), post its form and frame pages on the gateway's origin and on the
 * origins its forms name (an issuer's ACS), and nothing else.
 */

const INLINE_SCRIPT = /<script\b[^>]*>[\s\S]*?<\/script>/gi;

/**
 * The gateway's redirect HTML (a fragment) as a document. The gateway expects it inserted into a
 * page first and its scripts run after (its form targets an iframe written after the script):
 * the scripts are moved after the fragment, unchanged (so their hashes hold).
 */
export function challengeDocument(fragment: string, lang: Lang): string {
  const scripts = fragment.match(INLINE_SCRIPT) ?? [];
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${h(TEXT[lang].challengeTitle)}</title></head>
<body>${fragment.replace(INLINE_SCRIPT, '')}${scripts.join('')}</body></html>`;
}

/** Each inline script's hash, and the origins the fragment's forms post to. */
function inspect(fragment: string, allowedProtocols: string[]): { hashes: string[]; origins: string[] } {
  const hashes = new Set<string>();
  for (const m of fragment.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (/\bsrc\s*=/i.test(m[1])) continue;
    hashes.add(`'sha256-${createHash('sha256').update(m[2], 'utf8').digest('base64')}'`);
  }
  const origins = new Set<string>();
  for (const m of fragment.matchAll(/\baction\s*=\s*(?:"([^"]*)"|'([^']*)')/gi)) {
    const raw = (m[1] ?? m[2]).replace(/&amp;/g, '&');
    if (!URL.canParse(raw)) continue;
    const u = new URL(raw);
    if (allowedProtocols.includes(u.protocol)) origins.add(u.origin);
  }
  return { hashes: [...hashes], origins: [...origins] };
}

/** The challenge page's CSP: the fragment's own scripts, its forms' and the gateway's origins for frames and posts (and our return in its frame), framed by the checkout only. */
export function challengeCsp(fragment: string, gatewayOrigins: readonly string[]): string {
  // https only, unless the gateway itself is http (its simulator, in tests)
  const protocols = gatewayOrigins.some((o) => o.startsWith('http:')) ? ['https:', 'http:'] : ['https:'];
  const { hashes, origins } = inspect(fragment, protocols);
  const allowed = [...new Set([...gatewayOrigins, ...origins])].join(' ');
  return [
    "default-src 'none'",
    `script-src ${hashes.length ? hashes.join(' ') : "'none'"}`,
    // the gateway's fragment sizes its frame with a style attribute
    "style-src 'unsafe-inline'",
    // 'self': the issuer's page sends the frame back to our /checkout/{id}/3ds-return
    `frame-src 'self' ${allowed}`,
    `form-action ${allowed}`,
    "base-uri 'none'",
    "frame-ancestors 'self'",
  ].join('; ');
}

const int = (v: unknown, min: number, max: number) =>
  Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;

/**
 * The payer's browser as the checkout page posts it beside a gateway session id (3-D Secure guide:
 * device.browserDetails), with the User-Agent and the address of the request itself.
 */
export function readBrowser(value: unknown, userAgent: string, ip: string): BrowserInfo {
  const b = value as Record<string, unknown> | null | undefined;
  const bad = (what: string): never => {
    throw new ValidationFailed('browser', `browser.${what}`);
  };
  if (!b || typeof b !== 'object' || Array.isArray(b)) return bad('must be an object');
  const known = ['acceptHeaders', 'colorDepth', 'javaEnabled', 'language', 'screenHeight', 'screenWidth', 'timeZone'];
  const extra = Object.keys(b).find((k) => !known.includes(k));
  if (extra) bad(`${extra} is not allowed`);
  if (typeof b.acceptHeaders !== 'string' || b.acceptHeaders.length > 512 || /[\r\n]/.test(b.acceptHeaders))
    bad("acceptHeaders must be the page request's Accept header (at most 512 characters)");
  if (!int(b.colorDepth, 1, 64)) bad('colorDepth must be an integer from 1 to 64');
  if (typeof b.javaEnabled !== 'boolean') bad('javaEnabled must be a boolean');
  if (typeof b.language !== 'string' || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(b.language))
    bad('language must be a language tag (navigator.language)');
  if (!int(b.screenHeight, 0, 100_000) || !int(b.screenWidth, 0, 100_000))
    bad('screenHeight and screenWidth must be integers from 0 to 100000');
  if (!int(b.timeZone, -840, 840)) bad('timeZone must be minutes from -840 to 840 (Date.getTimezoneOffset())');
  return {
    userAgent: (userAgent || 'unknown').slice(0, 255),
    acceptHeaders: (b.acceptHeaders as string) || '*/*',
    colorDepth: b.colorDepth as number,
    javaEnabled: b.javaEnabled as boolean,
    language: b.language as string,
    screenHeight: b.screenHeight as number,
    screenWidth: b.screenWidth as number,
    timeZone: b.timeZone as number,
    ...(ip ? { ipAddress: ip } : {}),
  };
}
