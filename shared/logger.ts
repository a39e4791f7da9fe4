import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets, API keys, signatures, Authorization and request bodies are
 * removed by path; phone numbers, e-mail addresses and card numbers are masked wherever they
 * appear in a logged string.
 */

const REDACT_PATHS = [
  'authorization', '*.authorization', '*.*.authorization',
  'secret', '*.secret', 'api_key', '*.api_key', 'apiKey', '*.apiKey',
  'webhook_secret', '*.webhook_secret', 'token', '*.token', 'password', '*.password',
  'signature', '*.signature', '*["x-signature"]', '*.*["x-signature"]',
  '*["x-service-signature"]', '*.*["x-service-signature"]',
  'body', '*.body', 'rawBody', '*.rawBody', 'card', '*.card',
];

const MSISDN = /\b(243)(\d{5})(\d{4})\b/g;
const EMAIL = /\b([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9.-]+\.[A-Za-z]{2,})\b/g;
const CARD = /\b(?:\d[ -]?){9,15}(\d{4})\b/g;
const API_KEY = /\b(svc_(?:test|live)_|sk_|whsec_)[A-Za-z0-9_-]{8,}/g;

/** Masks personal data and credentials inside free text. */
export function maskText(text: string): string {
  return text
    .replace(API_KEY, '$1[redacted]')
    .replace(MSISDN, '$1*****$3')
    .replace(EMAIL, '$1***@$2')
    .replace(CARD, '************$1');
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
  for (const [k, v] of Object.entries(value)) out[k] = maskValue(v, depth + 1);
  return out;
}

export function createLogger(level = process.env.LOG_LEVEL || 'info', name?: string, destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    name,
    base: { pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { log: (obj) => maskValue(obj) as Record<string, unknown> },
    // errors are already plain and masked by the formatter above (pino's default would relabel them)
    serializers: { err: (err: unknown) => err },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? maskText(a) : a)) as Parameters<typeof method>);
      },
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
