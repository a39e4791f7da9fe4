import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Airtel's callback authentication (https://developers.airtel.africa/documentation, Collection
 * API, "Callback with authentication"): when enabled in the application's settings, the callback
 * carries a `hash`: the callback request hashed with HmacSHA256 under the private key shown in
 * the settings, written in base64. The reference does not say which bytes are hashed (the body
 * holds the hash itself, so not the raw body); see shared/providers/airtel/README.md#unclear-points-and-the-choices-made, point 1. Configurable:
 * - `request` (default): the request without its hash, `{"transaction":{...}}`, written compactly
 *   with the fields in the order received;
 * - `transaction`: the `transaction` object alone, written the same way.
 * The hash is read from the body's `hash`, or else from a `hash` header.
 */
export type CallbackHashOver = 'request' | 'transaction';

/** The bytes hashed, from the parsed body. */
export function hashedText(body: Record<string, unknown>, over: CallbackHashOver): string {
  if (over === 'transaction') return JSON.stringify(body.transaction);
  const { hash: _hash, ...rest } = body;
  return JSON.stringify(rest);
}

export function callbackHash(secret: string, body: Record<string, unknown>, over: CallbackHashOver): string {
  return createHmac('sha256', secret).update(hashedText(body, over), 'utf8').digest('base64');
}

/** Constant-time comparison of a received base64 hash with the expected one. */
export function hashMatches(
  secret: string,
  body: Record<string, unknown>,
  received: string,
  over: CallbackHashOver,
): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(received)) return false;
  const expected = createHmac('sha256', secret).update(hashedText(body, over), 'utf8').digest();
  const got = Buffer.from(received, 'base64');
  return got.length === expected.length && timingSafeEqual(got, expected);
}
