// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { clockOf } from '../../clock';
import { createSandboxServer } from './app';
import { runSandbox } from './http';

/** Entry point of the sandbox provider (Procfile `sandbox-provider`): plays the four operators for test keys on SANDBOX_PROVIDER_PORT. */
runSandbox('sandbox-provider', 'sandbox provider listening', (config, log) => ({
  server: createSandboxServer({
    apiKey: config.connectors.sandbox.apiKey,
    callbackSecret: config.connectors.sandbox.callbackSecret,
    callbackDelayMs: config.connectors.sandbox.callbackDelayMs,
    pushLatencyMs: config.connectors.sandbox.pushLatencyMs,
    windowMs: config.providerWindowMs.test,
    clock: clockOf(config),
    log,
  }),
  port: config.connectors.sandbox.port,
  // as a provider's front would: a burst of pushes waits to be accepted rather than being dropped
  backlog: 4096,
}));
