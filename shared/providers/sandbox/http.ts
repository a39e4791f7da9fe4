import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getConfig, type Config } from '../../config';
import { beatForSupervisor } from '../../heartbeat';
import { createLogger, type Logger } from '../../logger';

/** What the sandboxes (mobile-money provider, card vault and acquirer) share as small HTTP servers. */

export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Send = (res: ServerResponse, status: number, body: unknown) => void;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

export function sendText(
  res: ServerResponse,
  status: number,
  type: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': String(Buffer.byteLength(text)),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    ...headers,
  });
  res.end(text);
}

/** The body as text, at most `max` bytes (413 beyond). */
export async function readBody(req: IncomingMessage, max = 16 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new SandboxError(413, 'payload-too-large', 'body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function readJson(req: IncomingMessage, max?: number): Promise<Record<string, unknown>> {
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
    throw new SandboxError(415, 'unsupported-media-type', 'send application/json');
  return jsonObject(await readBody(req, max));
}

/** The text as a JSON object (400 otherwise). */
export function jsonObject(text: string): Record<string, unknown> {
  try {
    const body = JSON.parse(text);
    if (body && typeof body === 'object' && !Array.isArray(body)) return body;
  } catch {
    /* falls through */
  }
  throw new SandboxError(400, 'invalid-request', 'body must be a JSON object');
}

/** A sandbox's server: a SandboxError thrown by `route` is its error answer; anything else is logged and answered 500. */
export function sandboxServer(
  name: string,
  log: Logger,
  route: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  send: Send = sendJson,
): http.Server {
  return http.createServer((req, res) => {
    route(req, res).catch((err) => {
      if (err instanceof SandboxError)
        return send(res, err.status, { error: { code: err.code, message: err.message } });
      log.error({ err: { message: (err as Error).message } }, `${name} error`);
      send(res, 500, { error: { code: 'internal', message: `${name} error` } });
    });
  });
}

/**
 * Runs a sandbox as its own process (Procfile), on its own port and so its own origin; port 0
 * picks a free port, logged on the listening line.
 */
export function runSandbox(
  name: string,
  listening: string,
  make: (config: Config, log: Logger) => { server: http.Server; port: number; backlog?: number },
): void {
  beatForSupervisor();
  process.env.PROCESS_NAME ||= name;
  const config = getConfig();
  const log = createLogger(config.logLevel, name);
  const { server, port, backlog } = make(config, log);
  server.keepAliveTimeout = 65_000;
  server.listen({ port, host: '127.0.0.1', backlog }, () => {
    const { port: bound } = server.address() as AddressInfo;
    log.info({ port: bound, url: `http://127.0.0.1:${bound}` }, listening);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
