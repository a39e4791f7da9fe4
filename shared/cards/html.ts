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

/** A token as it may appear in a log line: its prefix and first characters only. */
export const maskToken = (token: string) => `${token.slice(0, 8)}…`;
