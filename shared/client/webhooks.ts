import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (README.md#integrating), for merchants (verification) and for the sender (signing).
 * `X-Service-Signature: t=<unix seconds>,v1=<hex>` where v1 is the lowercase hex HMAC-SHA256,
 * keyed by the merchant's webhook secret (`whsec_...`), over `<t>.<raw body>`.
 *
 * A receiver must verify the raw body bytes exactly as received (before any JSON parsing), e.g.
 *
 *   const raw = await readRawBody(req);
 *   const check = verifyWebhook(raw, req.headers, process.env.WHSEC);
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
export function standardSignature(secret: string, id: string, timestamp: number, rawBody: string | Buffer): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

/** The `webhook-signature` header value: one entry per secret, space-separated. */
export function standardSignatureHeader(
  secrets: string | string[],
  id: string,
  timestamp: number,
  rawBody: string | Buffer,
): string {
  return (Array.isArray(secrets) ? secrets : [secrets])
    .map((s) => standardSignature(s, id, timestamp, rawBody))
    .join(' ');
}

export type VerifyResult =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'malformed-header' | 'timestamp-outside-tolerance' | 'signature-mismatch' };

export interface VerifyOptions {
  /** Largest accepted |now - t|, in seconds; default 300 (README.md#integrating). */
  toleranceSeconds?: number;
  /** Current Unix time in seconds; defaults to the clock. */
  now?: number;
}

/** A request's headers as Node (`req.headers`), fetch (`Headers`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
  }
  return undefined;
}

/** A well-formed header's verdict: its time against the tolerance, then every pair of signatures, compared in constant time. */
function verdict(timestamp: number, candidates: string[], expected: string[], opts: VerifyOptions): VerifyResult {
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS))
    return { ok: false, reason: 'timestamp-outside-tolerance' };
  let matched = false;
  for (const e of expected) {
    const want = Buffer.from(e, 'utf8');
    for (const candidate of candidates) {
      const given = Buffer.from(candidate, 'utf8');
      // equal lengths are required by timingSafeEqual; a wrong length says nothing about the secret
      const same = given.length === want.length && timingSafeEqual(given, want);
      matched = same || matched;
    }
  }
  return matched ? { ok: true, timestamp } : { ok: false, reason: 'signature-mismatch' };
}

/** `X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]` (README.md#integrating). */
function verifyServiceSignature(
  rawBody: string | Buffer,
  value: string | undefined,
  secrets: string[],
  opts: VerifyOptions,
): VerifyResult {
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
  return verdict(
    timestamp,
    candidates,
    secrets.map((s) => webhookSignature(s, timestamp, rawBody)),
    opts,
  );
}

/** Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>[ v1,<base64>]`. */
function verifyStandard(
  rawBody: string | Buffer,
  headers: WebhookHeaders,
  secrets: string[],
  opts: VerifyOptions,
): VerifyResult {
  const id = headerOf(headers, 'webhook-id');
  const ts = headerOf(headers, 'webhook-timestamp');
  const value = headerOf(headers, 'webhook-signature');
  if (!id || !ts || !/^\d{1,12}$/.test(ts) || !value || value.length > 2048)
    return { ok: false, reason: 'malformed-header' };
  const timestamp = Number(ts);
  const candidates = value.split(' ').filter((e) => e.startsWith('v1,'));
  if (candidates.length === 0) return { ok: false, reason: 'malformed-header' };
  return verdict(
    timestamp,
    candidates,
    secrets.map((s) => standardSignature(s, id, timestamp, rawBody)),
    opts,
  );
}

/**
 * Accepts or rejects a delivery, from its raw body bytes (before any JSON parsing) and either
 * the X-Service-Signature value or the request's headers. Given headers, X-Service-Signature is
 * checked when present, else the Standard Webhooks headers (webhook-id, webhook-timestamp,
 * webhook-signature). Every signature of the header is compared in constant time: while the
 * service rotates the webhook secret each delivery carries two (one per secret), and `secret`
 * may also be a list (yours, old and new) for the receiver's own switch-over.
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  header: string | string[] | WebhookHeaders | undefined | null,
  secret: string | readonly string[],
  opts: VerifyOptions = {},
): VerifyResult {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) throw new Error('verifyWebhook needs a webhook secret');
  if (header && typeof header === 'object' && !Array.isArray(header)) {
    const service = headerOf(header, 'x-service-signature');
    if (service !== undefined) return verifyServiceSignature(rawBody, service, secrets, opts);
    return verifyStandard(rawBody, header, secrets, opts);
  }
  return verifyServiceSignature(rawBody, Array.isArray(header) ? header[0] : (header ?? undefined), secrets, opts);
}
