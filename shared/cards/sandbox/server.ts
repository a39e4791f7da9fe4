import { beatForSupervisor } from '../../heartbeat';
import type { AddressInfo } from 'node:net';
import { clockOf } from '../../clock';
import { getConfig } from '../../config';
import { createLogger } from '../../logger';
import { createAcquirerServer } from './acquirer';
import { createVaultServer } from './vault';

/**
 * Runs one card sandbox (Procfile `card-vault`: vaultServer.ts, `card-acquirer`: acquirerServer.ts):
 * one process each, on its own port, so each has its own origin. Port 0 picks a free port,
 * logged on the 'listening' line.
 */
export function runCardSandbox(which: 'vault' | 'acquirer'): void {
  beatForSupervisor();
  const name = `card-${which}`;
  process.env.PROCESS_NAME ||= name;
  const config = getConfig();
  const log = createLogger(config.logLevel, name);
  const { cards } = config;
  const serviceOrigin = new URL(config.baseUrl).origin;
  const clock = clockOf(config);
  const server =
    which === 'vault'
      ? createVaultServer({ serviceOrigin, apiKey: cards.vaultApiKey, tokenTtlMs: cards.tokenTtlMs, clock, log })
      : createAcquirerServer({
          apiKey: cards.sandbox.apiKey,
          callbackSecret: cards.sandbox.callbackSecret,
          vaultUrl: cards.sandbox.vaultUrl,
          vaultApiKey: cards.vaultApiKey,
          publicUrl: cards.sandbox.providerUrl,
          serviceOrigin,
          callbackDelayMs: cards.sandboxCallbackDelayMs,
          threeDsWindowMs: cards.threeDsWindowMs,
          clock,
          log,
        });
  server.keepAliveTimeout = 65_000;
  server.listen(which === 'vault' ? cards.vaultPort : cards.providerPort, '127.0.0.1', () => {
    const { port: bound } = server.address() as AddressInfo;
    log.info({ port: bound, url: `http://127.0.0.1:${bound}` }, `${name} listening`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

