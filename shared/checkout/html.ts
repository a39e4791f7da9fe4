/** Text helpers of the hosted checkout (card and payment-link pages): escaping, amounts, masks. */

/** Text made safe for HTML content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** An amount in minor units as the checkout shows it: minor units / 100 with its currency (`25.00 USD`). */
export function formatAmount(minor: number, currency: string): string {
  const sign = minor < 0 ? '-' : '';
  const abs = Math.abs(minor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')} ${currency}`;
}

/** An amount as a client types it (`25`, `25.5`, `25,50`), in minor units; null when it is not one (or not above 0). */
export function parseAmount(text: string | undefined): number | null {
  const m = /^\s*([0-9]{1,10})(?:[.,]([0-9]{1,2}))?\s*$/.exec(text ?? '');
  if (!m) return null;
  const minor = Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
  return minor >= 1 ? minor : null;
}

/** A token as it may appear in a log line: its prefix and first characters only. */
export const maskToken = (token: string) => `${token.slice(0, 8)}…`;

/**
 * A phone number as every page shows it (docs/decisions.md#payment-links): country code, the first two digits of the
 * national number, the last three, the rest masked (`+243 81• ••• •678`).
 */
export function maskPhone(msisdn: string): string {
  if (!/^243[0-9]{9}$/.test(msisdn)) return '•••';
  const n = msisdn.slice(3);
  return `+243 ${n.slice(0, 2)}• ••• •${n.slice(6)}`;
}
