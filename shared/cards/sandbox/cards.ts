/**
 * The sandbox card table of docs/decisions.md#sandbox-test-keys, as the sandbox vault and acquirer play it:
 *   4242424242424242 succeeds · 4000000000003220 asks for the 3-D Secure challenge, then succeeds
 *   ("Complete authentication") or fails `authentication-failed` ("Fail authentication") ·
 *   4000000000000002 is declined `card-declined` · 4000000000000077 succeeds, and the first refund
 *   request of its payment is answered HTTP 503 after the refund is made (an unknown outcome: the
 *   same request again finds it) · any other valid number succeeds.
 * Any expiry in the future and any 3-digit CVC are accepted.
 */

export type SandboxCardBehaviour = 'approve' | 'challenge' | 'decline';

export function sandboxCardBehaviour(number: string): SandboxCardBehaviour {
  if (number === '4000000000003220') return 'challenge';
  if (number === '4000000000000002') return 'decline';
  return 'approve';
}

/** What the acquirer does to the refunds of a payment paid with this card. */
export type SandboxRefundFault = 'none' | '5xx-once';

export function sandboxRefundFault(number: string): SandboxRefundFault {
  return number === '4000000000000077' ? '5xx-once' : 'none';
}

/** Luhn check of a card number (digits only). */
export function luhnValid(number: string): boolean {
  if (!/^[0-9]{12,19}$/.test(number)) return false;
  let sum = 0;
  for (let i = 0; i < number.length; i++) {
    let d = number.charCodeAt(number.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export function brandOf(number: string): string {
  if (/^4/.test(number)) return 'visa';
  if (/^(5[1-5]|2[2-7])/.test(number)) return 'mastercard';
  if (/^3[47]/.test(number)) return 'amex';
  return 'unknown';
}

/** `MM/YY` (or `MM / YY`, `MM/YYYY`) in the future at `now`, else null. */
export function parseExpiry(text: string, now = new Date()): { month: number; year: number } | null {
  const m = /^\s*(0[1-9]|1[0-2])\s*\/\s*([0-9]{2}|[0-9]{4})\s*$/.exec(text);
  if (!m) return null;
  const month = Number(m[1]);
  const year = m[2].length === 2 ? 2000 + Number(m[2]) : Number(m[2]);
  const endOfMonth = Date.UTC(year, month, 1); // first instant after the expiry month
  if (endOfMonth <= now.getTime()) return null;
  return { month, year };
}
