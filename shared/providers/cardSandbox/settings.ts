import {
  ConfigError,
  DEV_CALLBACK_SECRETS,
  DEV_CARD_CALLBACK_SECRET,
  int,
  portDefault,
  url,
  type Env,
} from '../../env';

/** the key the sandbox acquirer redeems tokens with at the sandbox vault */
export const DEV_CARD_VAULT_API_KEY = 'card-vault-key-change-me';

/**
 * The card sandbox (test keys; docs/decisions.md#cards-hosted-checkout): a vault that serves the
 * card-field iframe and the token API, and an acquirer that charges tokens, serves the issuer's
 * 3-D Secure page and calls back (shared/cards/sandbox/). Each is its own process, port and so
 * origin (Procfile `card-vault`, `card-acquirer`); they run in production too, for test keys.
 */
export interface CardSandboxSettings {
  /** the vault: what browsers reach (the checkout frames this origin), and the port it listens on */
  vaultUrl: string;
  vaultPort: number;
  /** the acquirer: what the service and browsers reach (its origin serves the 3-D Secure page), and its port */
  providerUrl: string;
  providerPort: number;
  /** the key the acquirer expects from us, and the secret it signs its callbacks with */
  apiKey: string;
  callbackSecret: string;
  /** the key the acquirer redeems tokens with at the vault */
  vaultApiKey: string;
  /** how long a sandbox token can be used (once) */
  tokenTtlMs: number;
  /** the acquirer's delay before its callback */
  callbackDelayMs: number;
}

export function loadCardSandboxSettings(env: Env, production: boolean): CardSandboxSettings {
  const vaultPort = int(env, 'CARD_VAULT_PORT', portDefault(env, 20, 4020), 0, 65535);
  const providerPort = int(env, 'CARD_PROVIDER_PORT', portDefault(env, 30, 4030), 0, 65535);
  const settings: CardSandboxSettings = {
    vaultUrl: url(env, 'CARD_VAULT_URL', `http://127.0.0.1:${vaultPort}`, ['http:', 'https:']),
    vaultPort,
    providerUrl: url(env, 'CARD_PROVIDER_URL', `http://127.0.0.1:${providerPort}`, ['http:', 'https:']),
    providerPort,
    apiKey: env.CARD_PROVIDER_API_KEY || 'card-provider-key',
    callbackSecret: env.CARD_CALLBACK_SECRET || DEV_CARD_CALLBACK_SECRET,
    vaultApiKey: env.CARD_VAULT_API_KEY || DEV_CARD_VAULT_API_KEY,
    tokenTtlMs: int(env, 'CARD_TOKEN_TTL_MS', 15 * 60_000, 100, 3_600_000),
    callbackDelayMs: int(env, 'CARD_SANDBOX_CALLBACK_DELAY_MS', 200, 0, 60_000),
  };
  if (production) {
    if (DEV_CALLBACK_SECRETS.includes(settings.callbackSecret))
      throw new ConfigError(
        'CARD_CALLBACK_SECRET must be set in production (the development callback secret is refused)',
      );
    if (settings.vaultApiKey === DEV_CARD_VAULT_API_KEY)
      throw new ConfigError('CARD_VAULT_API_KEY must be set in production (the development key is refused)');
  }
  return settings;
}
