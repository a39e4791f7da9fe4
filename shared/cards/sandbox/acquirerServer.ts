// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { runCardSandbox } from './server';

/** Entry point of the sandbox card acquirer (Procfile `card-acquirer`), on CARD_PROVIDER_PORT. */
runCardSandbox('acquirer');
