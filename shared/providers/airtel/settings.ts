import { ConfigError, int, oneOf, pem, together, url, urlProtocols, type Env } from '../../env';

/** Airtel Money Open API (direct contract). */
export interface AirtelSettings {
  url: string;
  clientId: string;
  clientSecret: string;
  country: string;
  /** the disbursement PIN and Airtel's RSA public key (PEM) it is encrypted with; null: no payouts */
  disbursementPin: string | null;
  pinPublicKey: string | null;
  /** the PIN's RSA padding; null: the one of Airtel's key version (the connector's default) */
  pinPadding: 'pkcs1' | 'oaep' | null;
  /** the secret of the callback `hash`; null: Airtel sends unsigned callbacks, each confirmed by a status query */
  callbackHashSecret: string | null;
  /** what the callback `hash` covers: the request without its hash, or its `transaction` alone (the reference does not say) */
  callbackHashOver: 'request' | 'transaction';
  /** the disbursement API version of the account: v1 (payee.msisdn only) or v2 (wallet_type, transaction.type) */
  disbursementVersion: 'v1' | 'v2';
  /** how our ids are written as Airtel's transaction.id: `compact` (P/R/O + 32 hex digits) or `ours` (pay_<uuid>) */
  idFormat: 'compact' | 'ours';
  /** the contract's smallest and largest amount per currency, in minor units; unset: the connector's placeholders */
  amountLimits: Partial<Record<'USD' | 'CDF', { min?: number; max?: number }>>;
}

/** AIRTEL_<CURRENCY>_MIN / _MAX: the contract's limits, in minor units (only those set). */
function airtelAmountLimits(env: Env): AirtelSettings['amountLimits'] {
  const given = (n: number) => (n === 0 ? undefined : n);
  const set = {
    USD: { min: given(int(env, 'AIRTEL_USD_MIN', 0, 1)), max: given(int(env, 'AIRTEL_USD_MAX', 0, 1)) },
    CDF: { min: given(int(env, 'AIRTEL_CDF_MIN', 0, 1)), max: given(int(env, 'AIRTEL_CDF_MAX', 0, 1)) },
  };
  const limits: AirtelSettings['amountLimits'] = {};
  for (const currency of ['USD', 'CDF'] as const) {
    const { min, max } = set[currency];
    if (min !== undefined && max !== undefined && min > max)
      throw new ConfigError(`AIRTEL_${currency}_MIN must not exceed AIRTEL_${currency}_MAX`);
    if (min !== undefined || max !== undefined)
      limits[currency] = { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
  }
  return limits;
}

/** Airtel settings that mean nothing without AIRTEL_URL, AIRTEL_CLIENT_ID and AIRTEL_CLIENT_SECRET. */
const AIRTEL_WITH_CONNECTION = [
  'AIRTEL_DISBURSEMENT_PIN',
  'AIRTEL_PIN_PUBLIC_KEY',
  'AIRTEL_CALLBACK_HASH_SECRET',
  'AIRTEL_CALLBACK_HASH_OVER',
  'AIRTEL_DISBURSEMENT_VERSION',
  'AIRTEL_ID_FORMAT',
  'AIRTEL_USD_MIN',
  'AIRTEL_USD_MAX',
  'AIRTEL_CDF_MIN',
  'AIRTEL_CDF_MAX',
];

/** AIRTEL_URL, AIRTEL_CLIENT_ID and AIRTEL_CLIENT_SECRET together, with the optional rest; null: Airtel is not configured. */
export function loadAirtelSettings(env: Env, production: boolean): AirtelSettings | null {
  if (!together(env, ['AIRTEL_URL', 'AIRTEL_CLIENT_ID', 'AIRTEL_CLIENT_SECRET'])) {
    if (AIRTEL_WITH_CONNECTION.some((n) => env[n]))
      throw new ConfigError(
        'AIRTEL_URL, AIRTEL_CLIENT_ID and AIRTEL_CLIENT_SECRET must be set with the other AIRTEL_ settings',
      );
    return null;
  }
  const pin = together(env, ['AIRTEL_DISBURSEMENT_PIN', 'AIRTEL_PIN_PUBLIC_KEY']);
  return {
    url: url(env, 'AIRTEL_URL', '', urlProtocols(production)),
    clientId: env.AIRTEL_CLIENT_ID!,
    clientSecret: env.AIRTEL_CLIENT_SECRET!,
    country: env.AIRTEL_COUNTRY || 'CD',
    disbursementPin: pin ? env.AIRTEL_DISBURSEMENT_PIN! : null,
    pinPublicKey: pin ? pem(env.AIRTEL_PIN_PUBLIC_KEY!) : null,
    pinPadding: env.AIRTEL_PIN_PADDING ? oneOf(env, 'AIRTEL_PIN_PADDING', ['pkcs1', 'oaep'] as const, 'oaep') : null,
    callbackHashSecret: env.AIRTEL_CALLBACK_HASH_SECRET || null,
    callbackHashOver: oneOf(env, 'AIRTEL_CALLBACK_HASH_OVER', ['request', 'transaction'] as const, 'request'),
    disbursementVersion: oneOf(env, 'AIRTEL_DISBURSEMENT_VERSION', ['v1', 'v2'] as const, 'v2'),
    idFormat: oneOf(env, 'AIRTEL_ID_FORMAT', ['compact', 'ours'] as const, 'compact'),
    amountLimits: airtelAmountLimits(env),
  };
}
