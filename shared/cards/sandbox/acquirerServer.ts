// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { clockOf } from '../../clock';
import { runSandbox } from '../../providers/sandbox/http';
import { createAcquirerServer } from './acquirer';

/** Entry point of the sandbox card acquirer (Procfile `card-acquirer`), on CARD_PROVIDER_PORT. */
runSandbox('card-acquirer', 'card-acquirer listening', (config, log) => {
  const { cards } = config;
  const server = createAcquirerServer({
    apiKey: cards.sandbox.apiKey,
    callbackSecret: cards.sandbox.callbackSecret,
    vaultUrl: cards.sandbox.vaultUrl,
    vaultApiKey: cards.vaultApiKey,
    publicUrl: cards.sandbox.providerUrl,
    serviceOrigin: new URL(config.baseUrl).origin,
    callbackDelayMs: cards.sandboxCallbackDelayMs,
    threeDsWindowMs: cards.threeDsWindowMs,
    clock: clockOf(config),
    log,
  });
  return { server, port: cards.providerPort };
});
