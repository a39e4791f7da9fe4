import { createHmac, randomUUID } from 'node:crypto';
import type { SecretsKey } from '../config';
import { safeEqual } from '../crypto/secrets';
import { UUID_V4_RE } from '../ids';

/**
 * The payment-link page's form token (docs/decisions.md#payment-links: CSRF protection and one payment per form). The
 * public pages set no cookie (docs/decisions.md#cards-hosted-checkout: no cookie), so the token is stateless:
 * `<attempt uuid>.<expiry, Unix s>.<tag>`, the tag an HMAC of the link id, the uuid and the
 * expiry under a key derived from SECRETS_KEY. It is bound to its link (a token of another
 * link is refused) and lives FORM_TOKEN_TTL_S; only the service can mint one. Its uuid is the
 * attempt: the Idempotency-Key its payment is created under, so a double submit or a reload
 * makes one payment.
 *
 * An attempt's status page is addressed by `<uuid>.<tag>` (attemptRef): no phone number or
 * payment id in any URL the page builds, and an address nobody can forge for another attempt.
 */

export const FORM_TOKEN_TTL_S = 30 * 60;

const derive = (k: SecretsKey) => createHmac('sha256', k.key).update('payment-link-form-token/v1').digest();

function tag(k: SecretsKey, text: string): string {
  return createHmac('sha256', derive(k)).update(text).digest('base64url').slice(0, 32);
}

export function issueFormToken(keys: SecretsKey[], linkId: string, nowMs: number): string {
  const attempt = randomUUID();
  const expires = Math.floor(nowMs / 1000) + FORM_TOKEN_TTL_S;
  return `${attempt}.${expires}.${tag(keys[0], `form\n${linkId}\n${attempt}\n${expires}`)}`;
}

export type FormTokenCheck = { ok: true; attempt: string } | { ok: false; reason: 'invalid' | 'expired' };

/** The token's attempt when it was minted by this service for this link and has not expired. */
export function checkFormToken(keys: SecretsKey[], linkId: string, token: unknown, nowMs: number): FormTokenCheck {
  if (typeof token !== 'string' || token.length > 200) return { ok: false, reason: 'invalid' };
  const [attempt, expires, t, ...rest] = token.split('.');
  if (rest.length || !attempt || !UUID_V4_RE.test(attempt) || !/^[0-9]{1,12}$/.test(expires ?? '') || !t)
    return { ok: false, reason: 'invalid' };
  if (!keys.some((k) => safeEqual(tag(k, `form\n${linkId}\n${attempt}\n${expires}`), t)))
    return { ok: false, reason: 'invalid' };
  if (Number(expires) * 1000 <= nowMs) return { ok: false, reason: 'expired' };
  return { ok: true, attempt: attempt.toLowerCase() };
}

/** The address part of an attempt's status page. */
export function attemptRef(keys: SecretsKey[], linkId: string, attempt: string): string {
  return `${attempt}.${tag(keys[0], `attempt\n${linkId}\n${attempt}`)}`;
}

/** The attempt a status page's address names, or null when the address was not made by this service for this link. */
export function attemptOf(keys: SecretsKey[], linkId: string, ref: string): string | null {
  const [attempt, t, ...rest] = ref.split('.');
  if (rest.length || !attempt || !UUID_V4_RE.test(attempt) || !t) return null;
  return keys.some((k) => safeEqual(tag(k, `attempt\n${linkId}\n${attempt}`), t)) ? attempt.toLowerCase() : null;
}
