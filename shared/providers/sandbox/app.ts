import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Clock } from '../../clock';
import type { Logger } from '../../logger';
import { safeEqual } from '../../crypto/secrets';
import { isMsisdn, OPERATORS, type Operator } from '../../msisdn';
import type { CallbackWire } from './protocol';
import type { ProviderObjectKind } from '../types';
import { sandboxOutcome, type SandboxOutcome } from './behaviour';
import { createCallbackSender } from './callbackSender';
import { jsonObject, readBody, sandboxServer, SandboxError } from './http';

/**
 * The sandbox provider: the provider protocol (../protocol.ts) for the four operators
 * (/{operator}/v1/...). It answers at once and, after the callback delay, reports the sandbox
 * table's outcome by signed callback. The same external id twice returns the first answer and
 * sends no second prompt or callback. State lives in memory: a simulator, restarted empty.
 */

export interface SandboxOptions {
  apiKey: string;
  callbackSecret: string;
  callbackDelayMs: number;
  /** simulated latency before answering a create request */
  pushLatencyMs: number;
  log: Logger;
  /** the sandbox's own window: a payment it never answers reports `expired` once it is over (docs/decisions.md#sandbox-test-keys) */
  windowMs: number;
  /** what decides when an outcome is due and a window over (a test moves it: shared/clock.ts) */
  clock: Clock;
}

interface SandboxTransaction {
  kind: ProviderObjectKind;
  operator: Operator;
  externalId: string;
  providerRef: string;
  callbackUrl: string;
  outcome: SandboxOutcome;
  /** when the outcome is known (to an ask, GET /v1/transactions/{id}) and the callback sent */
  outcomeAt: number;
  /** a payment never answered is `expired` from then on */
  expiresAt: number;
  eventId: string;
  createdAt: number;
  /** create requests received with this external id (1 prompt however many) */
  requests: number;
  callbacksDelivered: number;
  callbackAttempts: number;
}

const PATHS: Record<string, ProviderObjectKind> = { collections: 'payment', refunds: 'refund', payouts: 'payout' };
const ID_PREFIX: Partial<Record<ProviderObjectKind, string>> = { payment: 'pay_', refund: 're_', payout: 'po_' };
/** A transaction is kept (asks about it, idempotent repeats) this long, and at most MAX_KEPT of them (the oldest go first). */
const KEEP_MS = 24 * 3600 * 1000;
const MAX_KEPT = 200_000;
const PRUNE_EVERY_MS = 60_000;

/** The provider's answers carry no headers but their type and length. */
function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function statusView(tx: SandboxTransaction, now: number) {
  const decided = tx.outcome.status !== 'never' && now >= tx.outcomeAt;
  const outcome = decided ? tx.outcome : undefined;
  // the client was never prompted to an end: a payment's push lapses with the sandbox's window
  const expired = tx.outcome.status === 'never' && tx.kind === 'payment' && now >= tx.expiresAt;
  return {
    kind: tx.kind,
    external_id: tx.externalId,
    provider_ref: tx.providerRef,
    status: outcome ? outcome.status : expired ? 'expired' : 'pending',
    failure_code: outcome?.status === 'failed' ? outcome.failureCode : null,
    failure_message: outcome?.status === 'failed' ? outcome.failureMessage : null,
    // sandbox-only counters, so tests can see how many prompts and callbacks happened
    sandbox: {
      requests: tx.requests,
      callback_attempts: tx.callbackAttempts,
      callbacks_delivered: tx.callbacksDelivered,
    },
  };
}

export function createSandboxServer(opts: SandboxOptions): Server {
  const transactions = new Map<string, SandboxTransaction>();
  const callbacks = createCallbackSender(opts.callbackSecret, opts.log, opts.clock);
  const { later } = callbacks;

  // one timer for every transaction's expiry (not one 24-hour timer each): memory and timers stay bounded
  const prune = setInterval(() => {
    const before = opts.clock.now() - KEEP_MS;
    for (const [id, tx] of transactions) {
      if (tx.createdAt >= before) break; // insertion order is creation order
      transactions.delete(id);
    }
  }, PRUNE_EVERY_MS);
  prune.unref();
  const keep = (tx: SandboxTransaction) => {
    transactions.set(tx.externalId, tx);
    if (transactions.size > MAX_KEPT) transactions.delete(transactions.keys().next().value!);
  };

  function deliver(tx: SandboxTransaction): void {
    if (tx.outcome.status === 'never') return;
    const body: CallbackWire = {
      event_id: tx.eventId,
      kind: tx.kind,
      external_id: tx.externalId,
      provider_ref: tx.providerRef,
      status: tx.outcome.status,
      failure_code: tx.outcome.status === 'failed' ? tx.outcome.failureCode : null,
      failure_message: tx.outcome.status === 'failed' ? tx.outcome.failureMessage : null,
      occurred_at: Math.floor(tx.outcomeAt / 1000),
    };
    void callbacks.send(tx.callbackUrl, body, {
      onAttempt: () => tx.callbackAttempts++,
      onDelivered: () => tx.callbacksDelivered++,
    });
  }

  async function create(
    operator: Operator,
    kind: ProviderObjectKind,
    req: IncomingMessage,
  ): Promise<[number, unknown]> {
    const body = jsonObject(await readBody(req));
    const externalId = body.external_id;
    if (typeof externalId !== 'string' || !externalId.startsWith(ID_PREFIX[kind]!) || externalId.length > 100) {
      throw new SandboxError(400, 'invalid-request', `external_id must be our ${kind} id`);
    }
    if (req.headers['idempotency-key'] !== externalId)
      throw new SandboxError(400, 'invalid-request', 'Idempotency-Key must equal external_id');
    const existing = transactions.get(externalId);
    if (existing) {
      existing.requests++;
      return [200, { provider_ref: existing.providerRef, status: 'pending' }];
    }
    const { amount, currency, msisdn, callback_url: callbackUrl } = body;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1)
      throw new SandboxError(400, 'invalid-amount', 'amount must be a positive integer');
    if (currency !== 'USD' && currency !== 'CDF')
      throw new SandboxError(400, 'invalid-currency', 'currency must be USD or CDF');
    if (typeof msisdn !== 'string' || !isMsisdn(msisdn))
      throw new SandboxError(400, 'invalid-msisdn', 'msisdn must be 243 followed by 9 digits');
    if (typeof callbackUrl !== 'string' || !/^https?:\/\//.test(callbackUrl))
      throw new SandboxError(400, 'invalid-request', 'callback_url must be an http(s) URL');
    const tx: SandboxTransaction = {
      kind,
      operator,
      externalId,
      providerRef: `SBX-${operator.slice(0, 3).toUpperCase()}-${randomUUID()}`,
      callbackUrl,
      outcome: sandboxOutcome(kind, msisdn),
      outcomeAt: opts.clock.now() + opts.callbackDelayMs,
      expiresAt: opts.clock.now() + opts.windowMs,
      eventId: `sbxevt_${randomUUID()}`,
      createdAt: opts.clock.now(),
      requests: 1,
      callbacksDelivered: 0,
      callbackAttempts: 0,
    };
    keep(tx);
    later(opts.callbackDelayMs, () => deliver(tx));
    return [201, { provider_ref: tx.providerRef, status: 'pending' }];
  }

  async function answer(req: IncomingMessage): Promise<[number, unknown]> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const parts = url.pathname.split('/').filter(Boolean);
    const operator = parts[0] as Operator;
    if (!OPERATORS.includes(operator) || parts[1] !== 'v1') throw new SandboxError(404, 'not-found', 'no such route');
    if (!safeEqual(req.headers.authorization ?? '', `Bearer ${opts.apiKey}`))
      throw new SandboxError(401, 'unauthorized', 'bad API key');
    if (req.method === 'POST' && parts.length === 3 && PATHS[parts[2]]) {
      const answer = await create(operator, PATHS[parts[2]], req);
      if (opts.pushLatencyMs > 0) await new Promise((r) => setTimeout(r, opts.pushLatencyMs));
      return answer;
    }
    if (req.method === 'GET' && parts.length === 4 && parts[2] === 'transactions') {
      const tx = transactions.get(decodeURIComponent(parts[3]));
      if (!tx || tx.operator !== operator) throw new SandboxError(404, 'not-found', 'no such transaction');
      return [200, statusView(tx, opts.clock.now())];
    }
    throw new SandboxError(404, 'not-found', 'no such route');
  }

  const server = sandboxServer('sandbox', opts.log, async (req, res) => send(res, ...(await answer(req))), send);
  server.on('close', () => {
    callbacks.close();
    clearInterval(prune);
  });
  return server;
}
