// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { clockOf } from '../../clock';
import { runSandbox } from '../../providers/sandbox/http';
import { createAcquirerServer } from './acquirer';

/** Entry point of the sandbox card acquirer (Procfile `card-acquirer`), on CARD_PROVIDER_PORT. */
runSandbox('card-acquirer', 'card-acquirer listening', (config, log) => {
  const sandbox = config.connectors['card-sandbox'];
  const server = createAcquirerServer({
    apiKey: sandbox.apiKey,
    callbackSecret: sandbox.callbackSecret,
    vaultUrl: sandbox.vaultUrl,
    vaultApiKey: sandbox.vaultApiKey,
    publicUrl: sandbox.providerUrl,
    serviceOrigin: new URL(config.baseUrl).origin,
    callbackDelayMs: sandbox.callbackDelayMs,
    threeDsWindowMs: config.cards.threeDsWindowMs,
    clock: clockOf(config),
    log,
  });
  return { server, port: sandbox.providerPort };
});
