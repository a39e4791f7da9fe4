import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../../scripts/lib/processes';
import type { ServiceContext } from '../../shared/context';
import { transact } from '../../shared/db/transact';
import { newId } from '../../shared/ids';
import type { EventType } from '../../shared/vocabulary';
import { emitEvent as emitEventIn } from '../../shared/webhooks/fanout';

/**
 * A merchant's webhook receiver on loopback (a real HTTP server), whose behaviour each test
 * chooses per path and per attempt: answer a status, redirect, hang, cut the connection, or
 * answer late. It records every request it gets, raw body included.
 */

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  at: number;
}

export type Behaviour = { status: number; delayMs?: number; location?: string } | { hang: true } | { close: true };

/** Picks the behaviour of one request (`n` counts requests to that path, from 1). */
export type Script = (req: Received, n: number) => Behaviour;

export interface Receiver {
  url: string;
  received: Received[];
  /** Most requests ever open at once on a path. */
  maxOpen: Map<string, number>;
  on(path: string, script: Script): void;
  at(path: string): Received[];
  waitFor(path: string, count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const scripts = new Map<string, Script>();
  const counts = new Map<string, number>();
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: Received = { path, headers: req.headers, raw: Buffer.concat(chunks), at: Date.now() };
      received.push(rec);
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      open.set(path, (open.get(path) ?? 0) + 1);
      maxOpen.set(path, Math.max(maxOpen.get(path) ?? 0, open.get(path)!));
      res.on('close', () => open.set(path, open.get(path)! - 1));
      const b: Behaviour = (scripts.get(path) ?? (() => ({ status: 200 })))(rec, n);
      if ('hang' in b) return;
      if ('close' in b) return void req.socket.destroy();
      const answer = () => {
        res.writeHead(b.status, { 'Content-Type': 'text/plain', ...(b.location ? { Location: b.location } : {}) });
        res.end(
          `answer ${b.status} to attempt ${String(rec.headers['x-service-delivery-attempt'])}; call 243812345678`,
        );
      };
      if (!b.delayMs) return answer();
      const t = setTimeout(() => (timers.delete(t), answer()), b.delayMs);
      timers.add(t);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const at = (path: string) => received.filter((r) => r.path === path);

  return {
    url: `http://127.0.0.1:${port}`,
    received,
    maxOpen,
    on: (path, script) => void scripts.set(path, script),
    at,
    waitFor: (path, count, timeoutMs = 20_000) =>
      eventually(async () => at(path).length >= count && at(path), timeoutMs),
    async close() {
      timers.forEach(clearTimeout);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Writes an event the way every flow does (transaction + outbox), without depending on those flows. */
export async function emitEvent(
  services: ServiceContext,
  merchantId: string,
  opts: {
    type?: EventType;
    environment?: 'test' | 'live';
    object?: Record<string, unknown>;
    objectVersion?: number;
  } = {},
) {
  const objectId = newId('payment');
  return transact(services, (trx, outbox) =>
    emitEventIn(trx, outbox, {
      merchantId,
      environment: opts.environment ?? 'test',
      type: opts.type ?? 'payment.succeeded',
      objectId,
      objectVersion: opts.objectVersion ?? 3,
      object: opts.object ?? {
        id: objectId,
        object: 'payment',
        status: 'succeeded',
        amount_charged: 5000,
        currency: 'USD',
      },
      at: services.clock.now(),
    }),
  );
}
