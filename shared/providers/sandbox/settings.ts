import {
  ConfigError,
  DEV_CALLBACK_SECRETS,
  DEV_SANDBOX_CALLBACK_SECRET,
  int,
  portDefault,
  url,
  type Env,
} from '../../env';

/**
 * The sandbox mobile-money provider (test keys, every operator; docs/decisions.md#sandbox-test-keys): the
 * server (shared/providers/sandbox/server.ts, Procfile `sandbox-provider`) and the connector the
 * service reaches it through (shared/providers/sandbox/connector.ts). It runs in production too, for test keys.
 */
export interface SandboxSettings {
  /** the port the sandbox server listens on, and the URL the service reaches it at */
  port: number;
  url: string;
  /** the API key the sandbox provider expects from us */
  apiKey: string;
  /** the shared secret the sandbox provider signs its callbacks with */
  callbackSecret: string;
  /** its delay before a callback, and its simulated latency before it answers a push */
  callbackDelayMs: number;
  pushLatencyMs: number;
}

export function loadSandboxSettings(env: Env, production: boolean): SandboxSettings {
  const port = int(env, 'SANDBOX_PROVIDER_PORT', portDefault(env, 10, 4010), 0, 65535);
  const callbackSecret = env.SANDBOX_CALLBACK_SECRET || DEV_SANDBOX_CALLBACK_SECRET;
  // the sandbox runs in production too (test keys), so its secret must not be a public one
  if (production && DEV_CALLBACK_SECRETS.includes(callbackSecret)) {
    throw new ConfigError(
      'SANDBOX_CALLBACK_SECRET must be set in production (the development callback secret is refused)',
    );
  }
  return {
    port,
    url: url(env, 'SANDBOX_PROVIDER_URL', `http://127.0.0.1:${port}`, ['http:', 'https:']),
    apiKey: env.SANDBOX_PROVIDER_API_KEY || 'sandbox-provider-key',
    callbackSecret,
    callbackDelayMs: int(env, 'SANDBOX_CALLBACK_DELAY_MS', 3000, 0),
    pushLatencyMs: int(env, 'SANDBOX_PUSH_LATENCY_MS', 0, 0, 120_000),
  };
}
