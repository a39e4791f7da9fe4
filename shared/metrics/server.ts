import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Logger } from '../logger';
import { COPIES_PER_BLOCK, metricsPortFor } from './ports';
import { collectProcessMetrics, processRegistry } from './registry';

/** Listens on `port`: false when another process has it. */
async function listen(server: Server, port: number): Promise<boolean> {
  try {
    await once(server.listen(port), 'listening');
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') return false;
    throw err;
  }
}

/**
 * GET /metrics of a worker pool process on its port (ports.ts), off unless one is configured; a
 * copy that finds it taken takes the next free one of the block. Metrics never stop a pool: with
 * no port to be had, it says so and runs on without them.
 */
export async function serveProcessMetrics(
  pool: string,
  log: Logger,
  env: Record<string, string | undefined> = process.env,
): Promise<Server | null> {
  const first = metricsPortFor(pool, env);
  if (first === null) return null;
  collectProcessMetrics(processRegistry);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    processRegistry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': processRegistry.contentType }).end(text),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  try {
    for (let port = first; port < first + COPIES_PER_BLOCK && port <= 65535; port++) {
      if (await listen(server, port)) {
        server.unref();
        log.info({ port }, 'metrics listening');
        return server;
      }
    }
    log.warn(
      { ports: `${first}-${first + COPIES_PER_BLOCK - 1}` },
      'metrics not served: every port of this pool is taken',
    );
  } catch (err) {
    log.warn({ port: first, err: { message: (err as Error).message } }, 'metrics not served');
  }
  return null;
}
