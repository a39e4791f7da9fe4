import type { Currency } from '../../vocabulary';
import { CURRENCIES } from '../../vocabulary';
import { ConfigError } from '../../env';

/** How amounts are written on the wire: 'fixed' keeps the currency's decimals ("10.50"); 'minimal' drops trailing zeros ("10.5"). */
export type AmountFormat = 'fixed' | 'minimal';
/** 'proceed': where 3-D Secure is not available for the card and the gateway says PROCEED, pay unauthenticated; 'refuse': fail. */
export type WhenUnavailable = 'proceed' | 'refuse';

/**
 * The Mastercard Gateway connector's settings (./README.md#settings-loadmpgssettings-null-when-no-mpgs_-variable-is-set), read from the environment
 * by a pure loader; shared/config.ts composes it. Null when no MPGS_ setting is set.
 */
export interface MpgsSettings {
  /** the bank's gateway origin, e.g. https://ap-gateway.mastercard.com (https in production; no path) */
  gatewayUrl: string;
  /** the gateway merchant id (TEST… on the gateway's test system; refused in production) */
  merchantId: string;
  /** the API password (Basic auth as merchant.<merchantId>): never logged */
  apiPassword: string;
  /** the webhook notification secret (X-Notification-Secret) of Merchant Administration */
  notificationSecret: string;
  /** REST API version in every path; default 100 */
  apiVersion: number;
  /** the currencies the merchant's gateway profile carries (MPGS_CURRENCIES, default USD) */
  currencies: Currency[];
  /** per carried currency, the least and most amount in minor units the profile accepts */
  limits: Partial<Record<Currency, { min: number; max: number }>>;
  /** EMV 3-D Secure before PAY (MPGS_3DS, default true) */
  threeDSecure: boolean;
  /** INITIATE_AUTHENTICATION authentication.acceptVersions (MPGS_3DS_VERSIONS, default 3DS2) */
  acceptVersions: '3DS2' | '3DS1,3DS2';
  /** when 3-D Secure is unavailable for a card and the gateway says PROCEED (MPGS_3DS_UNAVAILABLE, default proceed) */
  whenUnavailable: WhenUnavailable;
  /** amount strings sent: fixed "10.50" (default) or minimal "10.5" (MPGS_AMOUNT_FORMAT) */
  amountFormat: AmountFormat;
  /** sent as order.notificationUrl on PAY; null: the URL set in Merchant Administration (MPGS_NOTIFICATION_URL) */
  notificationUrl: string | null;
  /** CREATE_SESSION session.authenticationLimit, 1-25 (MPGS_SESSION_AUTHENTICATION_LIMIT, default 5) */
  authenticationLimit: number;
  /** per HTTP call to the gateway (MPGS_TIMEOUT_MS, default 30 000) */
  timeoutMs: number;
}

export class MpgsSettingsError extends ConfigError {}

type Env = Record<string, string | undefined>;

const REQUIRED = ['MPGS_GATEWAY_URL', 'MPGS_MERCHANT_ID', 'MPGS_API_PASSWORD', 'MPGS_NOTIFICATION_SECRET'];

/** Placeholder limits until the acquirer's contract gives them (minor units). */
const DEFAULT_LIMITS: Record<Currency, { min: number; max: number }> = {
  USD: { min: 100, max: 1_000_000 },
  CDF: { min: 100_000, max: 2_500_000_000 },
};

/**
 * `production`: https only, no TEST merchant. Default: NODE_ENV is production.
 * Throws MpgsSettingsError naming the setting that is wrong.
 */
export function loadMpgsSettings(env: Env, production = env.NODE_ENV === 'production'): MpgsSettings | null {
  const set = Object.keys(env).filter((k) => k.startsWith('MPGS_') && env[k] !== undefined && env[k] !== '');
  if (set.length === 0) return null;
  const missing = REQUIRED.filter((n) => !env[n]);
  if (missing.length > 0)
    throw new MpgsSettingsError(`${missing.join(', ')} must be set with the other MPGS_ settings`);

  const gatewayUrl = origin(env.MPGS_GATEWAY_URL!, production);
  const merchantId = env.MPGS_MERCHANT_ID!;
  if (!/^[0-9A-Za-z_-]{1,40}$/.test(merchantId))
    throw new MpgsSettingsError('MPGS_MERCHANT_ID must be 1 to 40 letters, digits, "_" or "-"');
  if (production && /^TEST/i.test(merchantId))
    throw new MpgsSettingsError('MPGS_MERCHANT_ID is a test merchant (TEST…): refused in production');
  const notificationSecret = env.MPGS_NOTIFICATION_SECRET!;
  if (notificationSecret.length < 16)
    throw new MpgsSettingsError('MPGS_NOTIFICATION_SECRET must have at least 16 characters');

  const currencies = list(env.MPGS_CURRENCIES ?? 'USD');
  const limits: MpgsSettings['limits'] = {};
  // each variable named whole, so that the settings' documentation check sees it read
  const given: Record<Currency, Env> = {
    USD: { MPGS_MIN_USD: env.MPGS_MIN_USD, MPGS_MAX_USD: env.MPGS_MAX_USD },
    CDF: { MPGS_MIN_CDF: env.MPGS_MIN_CDF, MPGS_MAX_CDF: env.MPGS_MAX_CDF },
  };
  for (const c of currencies) {
    const min = int(given[c], `MPGS_MIN_${c}`, DEFAULT_LIMITS[c].min, 1);
    const max = int(given[c], `MPGS_MAX_${c}`, DEFAULT_LIMITS[c].max, 1);
    if (min > max) throw new MpgsSettingsError(`MPGS_MIN_${c} must not exceed MPGS_MAX_${c}`);
    limits[c] = { min, max };
  }

  const notificationUrl = env.MPGS_NOTIFICATION_URL
    ? absoluteUrl('MPGS_NOTIFICATION_URL', env.MPGS_NOTIFICATION_URL, production)
    : null;
  return {
    gatewayUrl,
    merchantId,
    apiPassword: env.MPGS_API_PASSWORD!,
    notificationSecret,
    apiVersion: int(env, 'MPGS_API_VERSION', 100, 100, 999),
    currencies,
    limits,
    threeDSecure: bool(env, 'MPGS_3DS', true),
    acceptVersions: oneOf(env, 'MPGS_3DS_VERSIONS', ['3DS2', '3DS1,3DS2'] as const, '3DS2'),
    whenUnavailable: oneOf(env, 'MPGS_3DS_UNAVAILABLE', ['proceed', 'refuse'] as const, 'proceed'),
    amountFormat: oneOf(env, 'MPGS_AMOUNT_FORMAT', ['fixed', 'minimal'] as const, 'fixed'),
    notificationUrl,
    authenticationLimit: int(env, 'MPGS_SESSION_AUTHENTICATION_LIMIT', 5, 1, 25),
    timeoutMs: int(env, 'MPGS_TIMEOUT_MS', 30_000, 1_000, 120_000),
  };
}

/** Whether the merchant's gateway profile can carry this amount (else 422 amount-not-supported). */
export function carries(settings: MpgsSettings, minor: number, currency: Currency): boolean {
  const l = settings.limits[currency];
  return l !== undefined && settings.currencies.includes(currency) && minor >= l.min && minor <= l.max;
}

function origin(raw: string, production: boolean): string {
  const url = absoluteUrl('MPGS_GATEWAY_URL', raw, production);
  const u = new URL(url);
  if (u.pathname !== '/' || u.search || u.hash)
    throw new MpgsSettingsError('MPGS_GATEWAY_URL must be the gateway origin only (https://host[:port]), no path');
  return u.origin;
}

function absoluteUrl(name: string, raw: string, production: boolean): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new MpgsSettingsError(`${name} is not a valid URL`);
  }
  const allowed = production ? ['https:'] : ['https:', 'http:'];
  if (!allowed.includes(u.protocol)) throw new MpgsSettingsError(`${name} must use ${allowed.join(' or ')}`);
  return raw;
}

function list(raw: string): Currency[] {
  const out: Currency[] = [];
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const c = CURRENCIES.find((x) => x === part);
    if (!c) throw new MpgsSettingsError(`MPGS_CURRENCIES: ${part} is not one of ${CURRENCIES.join(', ')}`);
    if (!out.includes(c)) out.push(c);
  }
  if (out.length === 0) throw new MpgsSettingsError('MPGS_CURRENCIES must name at least one currency');
  return out;
}

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new MpgsSettingsError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new MpgsSettingsError(`${name} must be between ${min} and ${max}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new MpgsSettingsError(`${name} must be true or false`);
  return raw === 'true';
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = allowed.find((a) => a === raw);
  if (!v) throw new MpgsSettingsError(`${name} must be one of ${allowed.join(', ')}`);
  return v;
}
