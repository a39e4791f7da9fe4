// first: starts OpenTelemetry (when OTEL_* turns traces on) before pg, ioredis and http load
import '../shared/tracing/register';
import cluster from 'node:cluster';
import { beatForSupervisor } from '../shared/heartbeat';
import { createServer, type Server } from 'node:http';
import type Koa from 'koa';
import { getConfig, type Config } from '../shared/config';
import { createContext } from '../shared/context';
import { checkDeployment } from '../shared/deployment';
import { createLogger } from '../shared/logger';
import { nextBackoff } from '../shared/restart';
import { buildApps } from './app';

/**
 * Entry point of the web process (Procfile `web`). With WEB_CONCURRENCY = n > 1 this process is
 * a node:cluster primary that runs n web processes sharing the one port (and ADMIN_PORT), starts
 * one again when it dies (1 s backoff doubling to 30 s), and stops them all on SIGTERM/SIGINT.
 * With ADMIN_PORT set, the operator API, Bull Board and /metrics are served on that port only.
 */

/** The process's configuration, read once. */
const config = getConfig();

/**
 * Slow clients cannot hold a connection open: headers within WEB_HEADERS_TIMEOUT_MS (15 s), the
 * whole request within WEB_REQUEST_TIMEOUT_MS (30 s). Node checks these bounds only every
 * `connectionsCheckingInterval` (30 s by default, so a slow client stayed up to 66 s): here every
 * second. New connections wait in a queue of WEB_LISTEN_BACKLOG (4096), not Node's 511.
 */
function listen(app: Koa, port: number, config: Config): Server {
  const server = createServer(
    {
      headersTimeout: config.webHeadersTimeoutMs,
      requestTimeout: config.webRequestTimeoutMs,
      keepAliveTimeout: 65_000,
      connectionsCheckingInterval: 1000,
    },
    app.callback(),
  );
  // a burst of new connections waits in the kernel's queue instead of having its SYNs dropped
  return server.listen({ port, backlog: config.webListenBacklog });
}

function serve(): void {
  const services = createContext({ role: 'web', name: 'web', config, poolMax: 16 });
  const apps = buildApps(services);
  const servers = [listen(apps.public, config.port, config)];
  if (apps.admin && config.adminPort !== null) servers.push(listen(apps.admin, config.adminPort, config));
  void Promise.all(servers.map((s) => new Promise((r) => s.once('listening', r)))).then(() => {
    services.log.info({ port: config.port, adminPort: config.adminPort ?? undefined }, 'web listening');
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.log.info({ signal }, 'web shutting down');
    let open = servers.length;
    for (const server of servers) {
      server.close(() => {
        if (--open === 0) void services.close().finally(() => process.exit(0));
      });
      server.closeIdleConnections();
    }
    setTimeout(() => process.exit(0), config.shutdownTimeoutMs).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function supervise(count: number): void {
  const log = createLogger(config.logLevel, 'web-primary');
  let stopping = false;
  const backoff = new Map<number, number>();
  const live = new Set<ReturnType<typeof cluster.fork>>();
  const fork = (slot: number) => {
    const startedAt = Date.now();
    const worker = cluster.fork();
    live.add(worker);
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      if (stopping) {
        if (live.size === 0) process.exit(0);
        return;
      }
      const wait = nextBackoff(backoff.get(slot) ?? 0, Date.now() - startedAt);
      backoff.set(slot, wait);
      log.error({ pid: worker.process.pid, code, signal, restartInMs: wait }, 'web process exited; restarting it');
      setTimeout(() => !stopping && fork(slot), wait);
    });
  };
  for (let slot = 1; slot <= count; slot++) fork(slot);
  log.info({ processes: count, port: config.port, adminPort: config.adminPort ?? undefined }, 'web primary started');
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'web primary stopping its processes');
    if (live.size === 0) process.exit(0);
    for (const w of live) w.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), config.shutdownTimeoutMs + 1000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

process.env.PROCESS_NAME ||= 'web';
const concurrency = config.webConcurrency;
// the supervisor hears from the primary; a cluster's web processes answer to it
if (cluster.isPrimary) beatForSupervisor();
const start = () => (cluster.isPrimary && concurrency > 1 ? supervise(concurrency) : serve());
// a bad deployment (prepared statements behind PgBouncer, a cluster node down) is refused before anything listens
if (cluster.isPrimary) {
  checkDeployment(config).then(start, (err: Error) => {
    process.stderr.write(`web refused to start: ${err.message}\n`);
    process.exit(1);
  });
} else start();
