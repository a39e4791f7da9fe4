// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { clockOf } from '../../clock';
import { runSandbox } from '../../providers/sandbox/http';
import { createVaultServer } from './vault';

/** Entry point of the sandbox card vault (Procfile `card-vault`), on CARD_VAULT_PORT. */
runSandbox('card-vault', 'card-vault listening', (config, log) => ({
  server: createVaultServer({
    serviceOrigin: new URL(config.baseUrl).origin,
    apiKey: config.connectors['card-sandbox'].vaultApiKey,
    tokenTtlMs: config.connectors['card-sandbox'].tokenTtlMs,
    clock: clockOf(config),
    log,
  }),
  port: config.connectors['card-sandbox'].vaultPort,
}));
