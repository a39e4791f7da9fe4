import pino, { type DestinationStream, type Logger } from 'pino';
import { traceFields, tracingOn } from './tracing/spans';

/**
 * Structured JSON logs. Fields whose value is never written, at any depth of a logged object
 * (their value becomes '[redacted]'): credentials, signatures, request bodies, card data. Checked
 * by the formatter's walk below, which also masks every string; pino's own path-based redaction
 * cost 12 µs a line (7 times the rest of a line's logging) and only looked two levels deep.
 */
const REDACTED_KEYS = new Set([
  'authorization',
  'secret',
  'api_key',
  'apiKey',
  'webhook_secret',
  'token',
  'password',
  'signature',
  'x-signature',
  'x-service-signature',
  'body',
  'rawBody',
  'card',
]);

/*
 * What is masked inside free text, and nothing else: ids, amounts, counts, ports, timestamps and
 * every other number stay readable, or error messages would be useless.
 * - MSISDNs: 243 + 9 digits, also written +243… or 00243…, and the national form 0 + 9 digits
 *   (the last four digits stay);
 * - e-mail addresses (the first character and the domain stay);
 * - card-like numbers: 13 to 19 digits in one run, or in the usual groups (4-4-4-4[-3],
 *   4-6-5) separated by single spaces or dashes (the last four digits stay);
 * - API keys and secrets: svc_test_, svc_live_, sk_, whsec_ (base64 included) keep their prefix.
 */
const MSISDN = /(?<![\d+])(\+|00)?(243)\d{5}(\d{4})(?!\d)/g;
/** the national form of a DRC mobile number: 0, an 8x or 9x prefix, 7 digits */
const NATIONAL = /(?<![\d+])0([89]\d)\d{3}(\d{4})(?!\d)/g;
const EMAIL = /\b([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9.-]+\.[A-Za-z]{2,})\b/g;
const CARD = /(?<!\d)(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?|\d{4}([ -])\d{6}\2\d{5})(?!\d)/g;
const API_KEY = /\b(svc_(?:test|live)_|sk_|whsec_)[A-Za-z0-9_+/=-]{8,}/g;

function maskCard(match: string): string {
  const digits = match.replace(/\D/g, '');
  if (digits.length < 13 || digits.length > 19) return match;
  return `************${digits.slice(-4)}`;
}

/** Every pattern above needs a digit, an '@' or a key prefix: most log strings have none and are returned as they are. */
const MAYBE_SENSITIVE = /[\d@]|svc_|sk_|whsec_/;

/** Masks personal data and credentials inside free text (and nothing else). */
export function maskText(text: string): string {
  if (!MAYBE_SENSITIVE.test(text)) return text;
  return text
    .replace(API_KEY, '$1[redacted]')
    .replace(MSISDN, (_m, plus: string | undefined, cc: string, last: string) => `${plus ?? ''}${cc}*****${last}`)
    .replace(NATIONAL, '0*****$2')
    .replace(EMAIL, '$1***@$2')
    .replace(CARD, maskCard);
}

const REDACTED = '[redacted]';

/** A path segment that is a phone number in any spelling: digits with spaces, dots, dashes, brackets or a plus, 7 digits or more. */
const PHONE_SEGMENT = /^[+\d\s().-]+$/;

/**
 * A request path as it may be logged: a segment that reads as a phone number in any spelling
 * (`%2B243%2081%20234%205678`, `(0)81.234.56.78`) keeps only its last four digits once
 * percent-decoded; the rest is masked like any text (ids such as `pay_…` stay readable).
 */
export function maskPath(path: string): string {
  return path
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // not percent-encoded text: judged as it is
      }
      const digits = decoded.replace(/\D/g, '');
      if (PHONE_SEGMENT.test(decoded) && digits.length >= 7) return `*****${digits.slice(-4)}`;
      return maskText(segment);
    })
    .join('/');
}

function maskValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskText(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) {
    // message, stack and driver details (pg's `detail` holds column values) are masked like any text
    const plain: Record<string, unknown> = { type: value.name, message: value.message, stack: value.stack };
    for (const [k, v] of Object.entries(value)) plain[k] = v;
    return maskValue(plain, depth + 1);
  }
  if (Array.isArray(value)) return value.map((v) => maskValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = REDACTED_KEYS.has(k) ? REDACTED : maskValue(v, depth + 1);
  return out;
}

const masked = (obj: Record<string, unknown>) => maskValue(obj) as Record<string, unknown>;

/** With traces on, each line also names the active span, added after the masking (a trace id may hold a run of digits that reads as a card number). */
const maskedWithTrace = (obj: Record<string, unknown>) => Object.assign(masked(obj), traceFields());

/** `traced` (default: whether this process started traces) adds the active span's ids to every line. */
export function createLogger(
  level = process.env.LOG_LEVEL || 'info',
  name?: string,
  destination?: DestinationStream,
  traced = tracingOn(),
): Logger {
  const options: pino.LoggerOptions = {
    level,
    name,
    base: { pid: process.pid },
    // every logged object: REDACTED_KEYS removed, strings masked (a child's bindings: below)
    formatters: { log: traced ? maskedWithTrace : masked },
    // errors are already plain and masked by the formatter above (pino's default would relabel them)
    serializers: { err: (err: unknown) => err },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? maskText(a) : a)) as Parameters<typeof method>);
      },
    },
  };
  // stdout written in the calling thread: a line is out before the next statement runs, so a crash
  // loses none, and a line costs one write(2) instead of a hop through libuv's thread pool and back
  // (pino's default), which at light load was a third of a worker's wake-ups
  const root = pino(options, destination ?? pino.destination({ fd: 1, sync: true }));
  // children are made from their parent (Object.create), so every descendant has this child():
  // its bindings are cleaned like a logged object (pino formats them only for the root)
  const child = root.child.bind(root);
  root.child = function (this: Logger, bindings, opts) {
    return child.call(this, maskValue(bindings) as typeof bindings, opts);
  } as typeof root.child;
  return root;
}

export type { Logger };
