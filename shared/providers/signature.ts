import { hmacHex, safeEqual } from '../crypto/secrets';

/**
 * Signature of provider callbacks: header `X-Provider-Signature: t=<unix seconds>,v1=<hex>`,
 * v1 = HMAC-SHA256(callback secret, `<t>.<raw body>`). A signature older or newer than the
 * tolerance is refused, so a captured callback cannot be replayed later.
 */
export const CALLBACK_SIGNATURE_HEADER = 'x-provider-signature';
export const CALLBACK_TOLERANCE_S = 300;

export function signCallback(secret: string, raw: string | Buffer, timestamp: number): string {
  return `t=${timestamp},v1=${hmacHex(secret, Buffer.concat([Buffer.from(`${timestamp}.`), Buffer.from(raw)]))}`;
}

export function verifyCallbackSignature(
  secret: string,
  raw: Buffer,
  header: string | undefined,
  nowUnix: number,
): boolean {
  if (!header || header.length > 512) return false;
  const parts = new Map<string, string>();
  for (const piece of header.split(',')) {
    const i = piece.indexOf('=');
    if (i > 0) parts.set(piece.slice(0, i).trim(), piece.slice(i + 1).trim());
  }
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (!t || !v1 || !/^\d{1,12}$/.test(t)) return false;
  if (Math.abs(nowUnix - Number(t)) > CALLBACK_TOLERANCE_S) return false;
  const expected = hmacHex(secret, Buffer.concat([Buffer.from(`${t}.`), raw]));
  return safeEqual(expected, v1);
}
