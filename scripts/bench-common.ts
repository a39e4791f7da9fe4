import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { signRequest } from '../shared/client/signing';

/**
 * What every bench script shares for its load: the entry that runs a file as the load generator
 * or, in a child process, as one of the servers it measures; the requests (a signed payment); the
 * closed and open loops that send them; the bare Koa app the service is held against. Their setup
 * and teardown (database, queue prefix, environment) are lib/stack.ts's.
 */

/** Runs the role named on the command line (`--serve`, `--web`, …), else the load generator. */
export function runBench(roles: Record<string, () => unknown>, bench: () => Promise<void>): void {
  const role = Object.keys(roles).find((flag) => process.argv.includes(flag));
  if (role) {
    Promise.resolve(roles[role]()).catch((err) => {
      console.error(err);
      process.exit(1);
    });
    return;
  }
  bench().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

/** One request of a load run; `body` is sent as is. */
export interface LoadRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * Called with every answer of a run that asks for it (status, body, when it was sent, latency ms,
 * the answer's headers or why there was none); status 0: no answer.
 */
export type OnAnswer = (status: number, body: Buffer, sentAtMs: number, latencyMs: number, info: AnswerInfo) => void;

export interface AnswerInfo {
  /** the answer's headers (none without an answer) */
  headers?: http.IncomingHttpHeaders;
  /** without an answer: `timeout` (cut after SendOptions.timeoutMs), else the error's code (ECONNRESET, ECONNREFUSED, …) */
  error?: string;
}

/** Options of a load run beside its shape. */
export interface SendOptions {
  /** reads each answer's body and hands it over (otherwise bodies are discarded unread) */
  onAnswer?: OnAnswer;
  /** a request still unanswered this long after it was sent is cut and counted as an error (error `timeout`) */
  timeoutMs?: number;
}

export interface LoadResult {
  seconds: number;
  /** 2xx answers. */
  ok: number;
  /** non-2xx answers and transport errors. */
  errors: number;
  /** latencies of every answer, ms, ascending */
  latencies: number[];
  /** where the slowest 1% of answered requests spent their time (means, ms) */
  slowest?: RequestPhases;
}

/**
 * A request's time from its send to its answer's end, in turn: waiting in the client for a
 * connection of the pool, opening a new one (0 when one was reused), writing the request, waiting
 * for the answer's headers, reading its body.
 */
export interface RequestPhases {
  queued: number;
  connect: number;
  write: number;
  wait: number;
  read: number;
}

function meanPhases(all: RequestPhases[]): RequestPhases {
  const sum = (k: keyof RequestPhases) => all.reduce((a, p) => a + p[k], 0) / (all.length || 1);
  return { queued: sum('queued'), connect: sum('connect'), write: sum('write'), wait: sum('wait'), read: sum('read') };
}

/** The slowest 1% of `timed` (latency, phases), their phases averaged. */
function slowestPhases(timed: [number, RequestPhases][]): RequestPhases | undefined {
  if (!timed.length) return undefined;
  const sorted = [...timed].sort((a, b) => b[0] - a[0]);
  return meanPhases(sorted.slice(0, Math.max(1, Math.ceil(sorted.length / 100))).map(([, p]) => p));
}

/** A figure with no decimal, or one; `-` for none (NaN: no sample). */
export const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');

export const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;

/**
 * Requests made ahead of a run, so that building and signing them does not take CPU from the
 * service while it is measured; `make` is called again if the run outlasts them.
 */
export function prepared(count: number, make: () => LoadRequest): () => LoadRequest {
  const pool = Array.from({ length: count }, make);
  let i = 0;
  return () => (i < pool.length ? pool[i++] : make());
}

/** Wall-clock milliseconds with sub-millisecond precision (comparable across processes). */
export const nowMs = () => performance.timeOrigin + performance.now();

function sender(port: number, connections: number, opts: SendOptions = {}) {
  // every connection opened is kept for reuse (Node keeps 256 idle ones by default and closes the
  // rest, so a burst past 256 in flight made the next burst open connections again)
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  const result = (seconds: number): LoadResult => ({ seconds, ok: 0, errors: 0, latencies: [] });
  const timed: [number, RequestPhases][] = [];
  const send = (r: LoadRequest, into: LoadResult): Promise<void> =>
    new Promise((resolve) => {
      const started = performance.now();
      let socketAt = NaN;
      let connectedAt = NaN;
      let writtenAt = NaN;
      let timedOut = false;
      let settled = false;
      // a whole-request deadline (not the socket's idle timeout): the time waiting for a pooled connection counts too
      const timer = opts.timeoutMs
        ? setTimeout(() => ((timedOut = true), req.destroy(new Error('timeout'))), opts.timeoutMs)
        : undefined;
      const failed = (err: Error & { code?: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        into.errors++;
        opts.onAnswer?.(0, Buffer.alloc(0), performance.timeOrigin + started, performance.now() - started, {
          error: timedOut ? 'timeout' : (err.code ?? err.message),
        });
        resolve();
      };
      const headers =
        r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) };
      const req = http.request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers, agent }, (res) => {
        const headersAt = performance.now();
        const chunks: Buffer[] = [];
        if (opts.onAnswer) res.on('data', (c: Buffer) => chunks.push(c));
        else res.resume();
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          const now = performance.now();
          const latency = now - started;
          into.latencies.push(latency);
          const connected = Number.isNaN(connectedAt) ? socketAt : connectedAt;
          timed.push([
            latency,
            {
              queued: socketAt - started,
              connect: connected - socketAt,
              write: writtenAt - connected,
              wait: headersAt - writtenAt,
              read: now - headersAt,
            },
          ]);
          if (res.statusCode! >= 200 && res.statusCode! < 300) into.ok++;
          else into.errors++;
          opts.onAnswer?.(res.statusCode!, Buffer.concat(chunks), performance.timeOrigin + started, latency, {
            headers: res.headers,
          });
          resolve();
        });
        // cut while its body was coming (the deadline, or the server closed the connection)
        res.on('error', failed);
        res.on('close', () =>
          res.complete ? undefined : failed(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })),
        );
      });
      req.on('socket', (socket) => {
        socketAt = performance.now();
        if (socket.connecting) socket.once('connect', () => (connectedAt = performance.now()));
      });
      req.on('finish', () => (writtenAt = performance.now()));
      req.on('error', failed);
      req.end(r.body);
    });
  /** the phases of the slowest 1% answered since the last call */
  const phases = () => slowestPhases(timed.splice(0));
  return { agent, result, send, phases };
}

/** Closed loop: `connections` clients, each sending its next request when the last is answered. */
export async function closedLoop(
  port: number,
  opts: { connections: number; seconds: number; next: () => LoadRequest },
): Promise<LoadResult> {
  const { agent, result, send, phases } = sender(port, opts.connections);
  const out = result(opts.seconds);
  const end = performance.now() + opts.seconds * 1000;
  await Promise.all(
    Array.from({ length: opts.connections }, async () => {
      while (performance.now() < end) await send(opts.next(), out);
    }),
  );
  agent.destroy();
  out.latencies.sort((a, b) => a - b);
  out.slowest = phases();
  return out;
}

/**
 * Open loop at a steady rate: requests leave evenly spaced (every 1/rate s), whether or not the
 * earlier ones are answered, as independent clients would send them. (autocannon's overallRate
 * fires its connections together, in bursts, which measures the bursts.)
 */
export async function openLoop(
  port: number,
  opts: { rate: number; seconds: number; next: () => LoadRequest; maxInFlight?: number } & SendOptions,
): Promise<LoadResult> {
  const { agent, result, send, phases } = sender(port, opts.maxInFlight ?? 1000, opts);
  const out = result(opts.seconds);
  const total = Math.round(opts.rate * opts.seconds);
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * opts.rate) / 1000) + 1);
    for (; sent < due; sent++) inFlight.push(send(opts.next(), out));
    await new Promise((r) => setTimeout(r, Math.max(0, start + (sent * 1000) / opts.rate - performance.now())));
  }
  await Promise.all(inFlight);
  agent.destroy();
  out.latencies.sort((a, b) => a - b);
  out.slowest = phases();
  return out;
}

/**
 * The bare Koa app the benches hold the service against: one route that reads the body with
 * raw-body, parses it and answers 201, no middleware. What a POST costs with nothing of the
 * service in it, on this machine.
 */
export function bareKoaApp(): Koa {
  const bare = new Koa();
  bare.use(async (ctx) => {
    const raw = await getRawBody(ctx.req, { limit: 100 * 1024 });
    ctx.status = 201;
    ctx.body = { ok: true, got: Object.keys(JSON.parse(raw.toString('utf8'))).length };
  });
  return bare;
}

/** A payment's body: 100.00 USD by mobile money from the sandbox number that succeeds. */
const paymentBody = (reference: string) =>
  JSON.stringify({
    amount: 10_000,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: '243990000001',
    reference,
  });

/** The request sent to the bare app: a payment's body, unsigned. */
export const BARE_REQUEST: LoadRequest = {
  method: 'POST',
  path: '/v1/payments',
  headers: { 'content-type': 'application/json' },
  body: paymentBody('bench'),
};

/**
 * A new payment signed with `key` as a merchant would sign it: a unique reference
 * (`<referencePrefix>-<uuid>`) and Idempotency-Key, X-Timestamp now (valid 300 s).
 */
export function signedPayment(key: { apiKey: string; secret: string }, referencePrefix: string): LoadRequest {
  const ts = String(Math.floor(Date.now() / 1000));
  const body = paymentBody(`${referencePrefix}-${randomUUID()}`);
  return {
    method: 'POST',
    path: '/v1/payments',
    body,
    headers: {
      authorization: `Bearer ${key.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
      'x-timestamp': ts,
      'x-signature': signRequest(key.secret, ts, 'POST', '/v1/payments', body),
    },
  };
}

/** Listens on 127.0.0.1:`port` (0: any free port); resolves with the server once it listens. */
export function listen(app: Koa | http.RequestListener, port = 0): Promise<http.Server> {
  const server = app instanceof Koa ? http.createServer(app.callback()) : http.createServer(app);
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

/** The port a server listens on. */
export const portOf = (server: http.Server) => (server.address() as AddressInfo).port;

/** Stops taking connections and cuts the open ones; resolves once the server is closed. */
export async function closeServer(server: http.Server): Promise<void> {
  const closed = new Promise((r) => server.close(r));
  server.closeAllConnections();
  await closed;
}

/**
 * A merchant's webhook receiver, run as a child process of a bench (forkRole): listens on
 * 127.0.0.1:`port` (0: any free port) and tells it with `{ port }`, answers every delivery 200 at
 * once, and keeps `receipt(event, request, arrivedAtMs)` of each one whose body is an event (when
 * it gives one). `{ cmd: 'take' }` sends the receipts kept so far and forgets them; any other
 * message, or the bench gone, stops it.
 */
export function webhookReceiver<R>(
  port: number,
  receipt: (event: any, req: http.IncomingMessage, atMs: number) => R | undefined,
): void {
  let receipts: R[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = nowMs();
      res.writeHead(200, { 'Content-Length': '2' }).end('ok');
      try {
        const r = receipt(JSON.parse(Buffer.concat(chunks).toString('utf8')), req, at);
        if (r !== undefined) receipts.push(r);
      } catch {
        /* not an event: ignored */
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => process.send!({ port: portOf(server) }));
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'take') {
      process.send!({ receipts });
      receipts = [];
    } else process.exit(0);
  });
  process.on('disconnect', () => process.exit(0)); // the bench is gone
}
