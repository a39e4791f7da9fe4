// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { runCardSandbox } from './server';

/** Entry point of the sandbox card vault (Procfile `card-vault`), on CARD_VAULT_PORT. */
runCardSandbox('vault');
