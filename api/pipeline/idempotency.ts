import { createHash } from 'node:crypto';
import { Stream } from 'node:stream';
import type { Context, Middleware } from 'koa';
import { UUID_V4_RE } from '../../shared/ids';
import { BadRequest, Conflict, DomainError } from '../../shared/errors';
import {
  IdempotencyKeyHeld,
  readIdempotencyKey,
  storeIdempotentResponse,
  type HeldKey,
  type IdempotentWrite,
  type StoredResponse,
} from '../../shared/idempotency';
import { httpError, isBackendFault, sendError } from '../middleware/errors';
import { canonicalPath, idempotencyOf } from './request';
import { TIMESTAMP_TOLERANCE_S } from './signed';
import { requestReplayed, signatureUse } from '../../shared/requestSignatures';

/** Response headers kept with the response and replayed (with the status and exact body bytes). */
const REPLAYED_HEADERS = ['Content-Type', 'Location'];

/** sha256 of method, route and the exact body bytes: same key + other hash → idempotency-conflict. */
export function requestHash(method: string, path: string, raw: Buffer): string {
  return createHash('sha256')
    .update(`${method}\n${canonicalPath(path)}\n`)
    .update(raw)
    .digest('hex');
}

/**
 * A 400 means the request was refused before doing anything, a 5xx that it failed: either way
 * the key is freed so that the merchant may retry with it. Every other outcome is stored and replayed.
 */
export function releasesKey(status: number): boolean {
  return status === 400 || status >= 500;
}

/** A JSON answer as sent and stored: exact bytes and the Content-Type Koa gives a JSON body. */
export function jsonAnswer(status: number, body: unknown): StoredResponse {
  return {
    status,
    headers: { 'Content-Type': 'application/json; charset=utf-8' },
    body: Buffer.from(JSON.stringify(body), 'utf8'),
  };
}

/** The key of this request, as the pipeline found it (ctx.state.idempotency); `stored` is the answer its route wrote with it. */
export interface RequestKey {
  write: Omit<IdempotentWrite<unknown>, 'encode'>;
  stored?: StoredResponse;
}

/**
 * What a route passes to shared code to write its request's Idempotency-Key in its own
 * transaction, the result encoded as the JSON answer with `status`; undefined without a key.
 */
export function idempotentWrite<T>(ctx: Context, status: number): IdempotentWrite<T> | undefined {
  const key = ctx.state.idempotency;
  if (!key) return undefined;
  const signed = ctx.state.signed;
  return {
    ...key.write,
    encode: (result: T) => (key.stored = jsonAnswer(status, result)),
    signature: signed && { signature: signed.signature, expires: signed.timestamp + TIMESTAMP_TOLERANCE_S },
  };
}

/** The exact bytes a body will be sent as; null for a stream (not stored). */
function bodyBytes(body: unknown): Buffer | null {
  if (body == null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Stream || body instanceof ReadableStream || body instanceof Blob || body instanceof Response)
    return null;
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function send(ctx: Context, r: StoredResponse): void {
  ctx.body = r.body;
  ctx.status = r.status;
  ctx.remove('Content-Type');
  ctx.set(r.headers);
}

/** The answer to a request whose key another request holds: its stored answer, or a 409. */
function answerHeld(ctx: Context, held: HeldKey | null): void {
  if (held?.kind === 'replay') {
    send(ctx, held.response);
    ctx.set('Idempotent-Replayed', 'true');
    return;
  }
  if (held?.kind === 'conflict')
    throw new Conflict('idempotency-conflict', 'This Idempotency-Key was already used with a different request');
  throw new Conflict('idempotency-in-progress', 'A request with this Idempotency-Key is still being processed', {
    retryAfter: 1,
  });
}

/** The answer the route left on ctx, as it will be sent and stored; null for a stream (not stored). */
function answerOf(ctx: Context): StoredResponse | null {
  const bytes = bodyBytes(ctx.body);
  if (bytes === null) return null;
  const headers: Record<string, string> = {};
  for (const h of REPLAYED_HEADERS) {
    const v = ctx.response.get(h);
    if (v) headers[h] = String(v);
  }
  if (ctx.body != null) {
    // send the very bytes stored (Koa would serialise an object the same way; now it is certain)
    const status = ctx.status;
    ctx.body = bytes;
    ctx.status = status;
    if (headers['Content-Type']) ctx.set('Content-Type', headers['Content-Type']);
  }
  return { status: ctx.status, headers, body: bytes };
}

/**
 * The request's Idempotency-Key, lower case, where its route takes one; 400 when required and
 * missing, or not a UUID v4 (checked by the replay guard first, whatever the signature's past).
 */
export function presentedKey(ctx: Context): string | undefined {
  const rule = idempotencyOf(ctx.method, ctx.path);
  if (!rule) return undefined;
  const presented = ctx.get('Idempotency-Key');
  if (!presented) {
    if (rule === 'optional') return undefined;
    throw new BadRequest('idempotency-key-required', 'The Idempotency-Key header is required');
  }
  if (!UUID_V4_RE.test(presented))
    throw new BadRequest('idempotency-key-invalid', 'The Idempotency-Key must be a UUID v4');
  return presented.toLowerCase();
}

/**
 * Step 9 (docs/decisions.md#merchant-pipeline; a refund: docs/decisions.md#refund-retries): the key is held in Postgres per
 * merchant, environment and key for 24 hours. The route writes it with its work, in its own
 * transaction (idempotentWrite); a request with the same key meanwhile waits for that
 * transaction and gets its answer, or 409 idempotency-in-progress (Retry-After: 1) after
 * IDEMPOTENCY_WAIT_MS. Same request: the stored answer byte for byte, `Idempotent-Replayed:
 * true`; another: 409 idempotency-conflict. A refusal that wrote nothing (404, 409, 422) is
 * stored right after the route; a 400 or 5xx frees the key, unless the key was already used.
 */
export const idempotency: Middleware = async (ctx, next) => {
  const presented = presentedKey(ctx);
  if (!presented) return next();

  const { db, config, clock } = ctx.services;
  const auth = ctx.state.auth!;
  const key: RequestKey = {
    write: {
      id: { merchantId: auth.merchantId, environment: auth.environment, key: presented },
      request: {
        method: ctx.method,
        path: canonicalPath(ctx.path),
        hash: requestHash(ctx.method, ctx.path, ctx.state.rawBody ?? Buffer.alloc(0)),
      },
      waitMs: config.idempotencyWaitMs,
      now: clock.now(),
    },
  };
  ctx.state.idempotency = key;
  const held = () => readIdempotencyKey(db, key.write.id, key.write.request, clock.now());
  try {
    await next();
  } catch (err) {
    key.stored = undefined; // encoded for the route's transaction, which did not commit
    if (err instanceof IdempotencyKeyHeld) {
      // a signature taken with the key (api/pipeline/replay.ts) that was accepted before, with another key or none
      if (ctx.state.signed && (await signatureUse(db, ctx.state.signed)) === 'replayed') throw requestReplayed();
      return answerHeld(ctx, await held());
    }
    // a backend down: answered 503 at once, not after another bounded wait for the key
    if (isBackendFault(err, config.databaseUrl)) throw err;
    if (!(err instanceof DomainError) || releasesKey(httpError(err).status)) {
      // the key is looked at only now: a key already used wins over this request's 400 or 5xx
      // (same request: its stored answer; another: idempotency-conflict), as in spec order
      const used = await held().catch(() => null);
      if (used) return answerHeld(ctx, used);
      throw err;
    }
    // a refusal that wrote nothing: rendered here, by the one renderer, so the stored bytes are the sent bytes
    sendError(ctx, err);
  }
  if (key.stored) return send(ctx, key.stored);
  if (releasesKey(ctx.status)) return;
  const answer = answerOf(ctx);
  if (!answer) return ctx.state.log.warn('streamed response on an idempotent route: key not stored');
  if (ctx.status < 300) ctx.state.log.error('an idempotent route answered without writing its key in its transaction');
  if (!(await storeIdempotentResponse(db, { ...key.write, encode: () => answer }, answer)))
    answerHeld(ctx, await held());
};
