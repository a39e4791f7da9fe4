// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../../tracing/register';
import { beatForSupervisor } from '../../heartbeat';
import type { AddressInfo } from 'node:net';
import { clockOf } from '../../clock';
import { getConfig } from '../../config';
import { createLogger } from '../../logger';
import { createSandboxServer } from './app';

/**
 * Entry point of the sandbox provider (Procfile `sandbox-provider`): plays the four operators
 * for test keys on SANDBOX_PROVIDER_PORT (0 picks a free port, logged on the 'listening' line).
 */
function main(): void {
  beatForSupervisor();
  process.env.PROCESS_NAME ||= 'sandbox-provider';
  const config = getConfig();
  const log = createLogger(config.logLevel, 'sandbox-provider');
  const server = createSandboxServer({
    apiKey: config.payments.sandboxProviderApiKey,
    callbackSecret: config.sandboxCallbackSecret,
    callbackDelayMs: config.sandboxCallbackDelayMs,
    pushLatencyMs: config.payments.sandboxPushLatencyMs,
    windowMs: config.providerWindowMs.test,
    clock: clockOf(config),
    log,
  });
  server.keepAliveTimeout = 65_000;
  // as a provider's front would: a burst of pushes waits to be accepted rather than being dropped
  server.listen({ port: config.sandboxProviderPort, host: '127.0.0.1', backlog: 4096 }, () => {
    const { port } = server.address() as AddressInfo;
    log.info({ port, url: `http://127.0.0.1:${port}` }, 'sandbox provider listening');
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
