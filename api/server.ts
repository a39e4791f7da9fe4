import type { Server } from 'node:http';
import { createContext } from '../shared/context';
import { buildApp } from './app';

/** Entry point of the web process (Procfile `web`). */
function main(): void {
  process.env.PROCESS_NAME ||= 'web';
  const services = createContext({ role: 'web', name: 'web', poolMax: 16 });
  const app = buildApp(services);
  const server: Server = app.listen(services.config.port, () => {
    services.log.info({ port: services.config.port }, 'web listening');
  });
  // slow clients cannot hold a connection open: headers within 15 s, the whole request within 30 s
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.log.info({ signal }, 'web shutting down');
    server.close(() => void services.close().finally(() => process.exit(0)));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), services.config.shutdownTimeoutMs).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
