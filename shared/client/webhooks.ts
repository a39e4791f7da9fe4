import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures of spec 6.4, for merchants (verification) and for the sender (signing).
 * `X-Service-Signature: t=<unix seconds>,v1=<hex>` where v1 is the lowercase hex HMAC-SHA256,
 * keyed by the merchant's webhook secret (`whsec_...`), over `<t>.<raw body>`.
 *
 * A receiver must verify the raw body bytes exactly as received (before any JSON parsing), e.g.
 *
 *   const raw = await readRawBody(req);
 *   const check = verifyWebhook(raw, req.headers['x-service-signature'], process.env.WHSEC);
 *   if (!check.ok) return res.writeHead(400).end();
 *   // deduplicate on X-Service-Delivery-Id, then use JSON.parse(raw)
 */

export const DEFAULT_TOLERANCE_SECONDS = 300;

export function webhookSignature(secret: string, timestamp: number | string, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

/**
 * The X-Service-Signature header value for one attempt: one `v1=` per secret (two while a
 * rotated secret's overlap lasts, the current secret first).
 */
export function signatureHeader(secrets: string | string[], timestamp: number, rawBody: string | Buffer): string {
  const list = Array.isArray(secrets) ? secrets : [secrets];
  return [`t=${timestamp}`, ...list.map((s) => `v1=${webhookSignature(s, timestamp, rawBody)}`)].join(',');
}

/**
 * Standard Webhooks (standardwebhooks.com), sent beside the spec's headers: `webhook-signature`
 * is `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, keyed by the
 * base64-decoded text after `whsec_` (as the standard keys a `whsec_` secret); entries for
 * several secrets are separated by a space. A merchant verifies with any Standard Webhooks
 * library, e.g. `new Webhook(secret).verify(rawBody, headers)` of the `standardwebhooks` package.
 */
export function standardWebhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

export function standardSignature(secret: string, id: string, timestamp: number, rawBody: string | Buffer): string {
  return `v1,${createHmac('sha256', standardWebhookKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

/** The `webhook-signature` header value: one entry per secret, space-separated. */
export function standardSignatureHeader(secrets: string | string[], id: string, timestamp: number, rawBody: string | Buffer): string {
  return (Array.isArray(secrets) ? secrets : [secrets]).map((s) => standardSignature(s, id, timestamp, rawBody)).join(' ');
}

export type VerifyResult =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'malformed-header' | 'timestamp-outside-tolerance' | 'signature-mismatch' };

export interface VerifyOptions {
  /** Largest accepted |now - t|, in seconds; default 300 (spec 6.4). */
  toleranceSeconds?: number;
  /** Current Unix time in seconds; defaults to the clock. */
  now?: number;
}

/**
 * Accepts or rejects a delivery. Every `v1=` value of the header is compared in constant time
 * with the expected signature (several may appear while a secret is being rotated).
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  header: string | string[] | undefined | null,
  secret: string,
  opts: VerifyOptions = {},
): VerifyResult {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value || value.length > 1024) return { ok: false, reason: 'malformed-header' };
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(val)) timestamp = Number(val);
    else if (key === 'v1') candidates.push(val);
  }
  if (timestamp === undefined || candidates.length === 0) return { ok: false, reason: 'malformed-header' };
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
    return { ok: false, reason: 'timestamp-outside-tolerance' };
  }
  const expected = Buffer.from(webhookSignature(secret, timestamp, rawBody), 'utf8');
  let matched = false;
  for (const candidate of candidates) {
    const given = Buffer.from(candidate, 'utf8');
    // equal lengths are required by timingSafeEqual; a wrong length says nothing about the secret
    const same = given.length === expected.length && timingSafeEqual(given, expected);
    matched = same || matched;
  }
  return matched ? { ok: true, timestamp } : { ok: false, reason: 'signature-mismatch' };
}
