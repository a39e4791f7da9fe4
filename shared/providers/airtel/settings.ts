import { ConfigError, oneOf, pem, together, url, urlProtocols, type Env } from '../../env';

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
}

/** AIRTEL_URL, AIRTEL_CLIENT_ID and AIRTEL_CLIENT_SECRET together, with the optional rest; null: Airtel is not configured. */
export function loadAirtelSettings(env: Env, production: boolean): AirtelSettings | null {
  if (!together(env, ['AIRTEL_URL', 'AIRTEL_CLIENT_ID', 'AIRTEL_CLIENT_SECRET'])) {
    if (['AIRTEL_DISBURSEMENT_PIN', 'AIRTEL_PIN_PUBLIC_KEY', 'AIRTEL_CALLBACK_HASH_SECRET'].some((n) => env[n]))
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
  };
}
