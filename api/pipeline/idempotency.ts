import { createHash } from 'node:crypto';
import { Stream } from 'node:stream';
import type { Context, Middleware, Next } from 'koa';
import type { AtomicIdempotency } from '../types';
import { UUID_V4_RE } from '../../shared/domain/ids';
import { BadRequest, Conflict, DomainError } from '../../shared/errors';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  IdempotencyKeyHeld,
  readIdempotencyKey,
  releaseIdempotencyKey,
  storeIdempotentResponse,
  type Claim,
  type IdempotencyKeyId,
  type IdempotentRequest,
  type StoredResponse,
} from '../../shared/idempotency';
import { httpError, sendError } from '../middleware/errors';
import { canonicalPath, idempotencyModeOf } from './request';

/** Response headers kept with the response and replayed (with the status and exact body bytes). */
const REPLAYED_HEADERS = ['Content-Type', 'Location'];

/** sha256 of method, route and the exact body bytes: same key + other hash → idempotency-conflict. */
export function requestHash(method: string, path: string, raw: Buffer): string {
  return createHash('sha256').update(`${method}\n${canonicalPath(path)}\n`).update(raw).digest('hex');
}

/**
 * A 400 (validation-failed, invalid-json, operator-mismatch...) means the request was refused
 * before doing anything, and a 5xx that it failed: either way the key is freed so that the
 * merchant may retry with it. Every other outcome (2xx, 404, 409 reference-conflict, 422...) is
 * stored and replayed.
 */
export function releasesKey(status: number): boolean {
  return status === 400 || status >= 500;
}

/** The exact bytes a body will be sent as; null for a stream (not stored). */
function bodyBytes(body: unknown): Buffer | null {
  if (body == null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Stream || body instanceof ReadableStream || body instanceof Blob || body instanceof Response) return null;
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function replay(ctx: Context, r: StoredResponse): void {
  send(ctx, r);
  ctx.set('Idempotent-Replayed', 'true');
}

/** The answer to a request whose key another request holds: its stored answer, or a 409. */
function answerHeld(ctx: Context, held: Exclude<Claim, { kind: 'claimed' }> | null): void {
  if (held?.kind === 'replay') return replay(ctx, held.response);
  if (held?.kind === 'conflict') throw new Conflict('idempotency-conflict', 'This Idempotency-Key was already used with a different request');
  throw new Conflict('idempotency-in-progress', 'A request with this Idempotency-Key is still being processed', { retryAfter: 1 });
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

function send(ctx: Context, r: StoredResponse): void {
  ctx.body = r.body;
  ctx.status = r.status;
  ctx.remove('Content-Type');
  ctx.set(r.headers);
}

/**
 * Runs the route; a domain error that is stored (not released) is rendered here, by the one
 * renderer, so that the stored bytes are the sent bytes. False when the key is to be freed.
 */
async function runRoute(ctx: Context, next: Next): Promise<boolean> {
  try {
    await next();
  } catch (err) {
    if (!(err instanceof DomainError) || releasesKey(httpError(err).status)) throw err;
    sendError(ctx, err);
  }
  return !releasesKey(ctx.status);
}

/**
 * Step 9 (spec 5.4, 5.6.9): on POST /v1/payments and POST /v1/payouts, an Idempotency-Key (UUID
 * v4) is required (400 idempotency-key-required / -invalid) and held in Postgres per merchant,
 * environment and key for 24 hours. Same key, same request: the stored response byte for byte
 * with `Idempotent-Replayed: true`; same key, other request: 409 idempotency-conflict. How the
 * key is held while the route runs depends on the route (request.ts): claimed first, or written
 * by the route with its work.
 */
export const idempotency: Middleware = async (ctx, next) => {
  const mode = idempotencyModeOf(ctx.method, ctx.path);
  if (!mode) return next();
  const presented = ctx.get('Idempotency-Key');
  if (!presented) throw new BadRequest('idempotency-key-required', 'The Idempotency-Key header is required');
  if (!UUID_V4_RE.test(presented)) throw new BadRequest('idempotency-key-invalid', 'The Idempotency-Key must be a UUID v4');

  const auth = ctx.state.auth!;
  const id: IdempotencyKeyId = { merchantId: auth.merchantId, environment: auth.environment, key: presented.toLowerCase() };
  const request: IdempotentRequest = { method: ctx.method, path: canonicalPath(ctx.path), hash: requestHash(ctx.method, ctx.path, ctx.state.rawBody ?? Buffer.alloc(0)) };
  return mode === 'atomic' ? atomic(ctx, next, id, request) : claimFirst(ctx, next, id, request);
};

/**
 * Claimed `in_progress` before the route; a second request meanwhile gets 409
 * idempotency-in-progress with Retry-After: 1. The answer is stored after the route.
 */
async function claimFirst(ctx: Context, next: Next, id: IdempotencyKeyId, request: IdempotentRequest): Promise<void> {
  const { db } = ctx.services;
  const claim = await claimIdempotencyKey(db, id, request);
  if (claim.kind !== 'claimed') return answerHeld(ctx, claim);

  const release = () =>
    releaseIdempotencyKey(db, id, claim.lock).catch((err) =>
      ctx.state.log.error({ err: { message: (err as Error).message } }, 'idempotency key release failed'),
    );
  let stores: boolean;
  try {
    stores = await runRoute(ctx, next);
  } catch (err) {
    await release();
    throw err;
  }
  const answer = stores ? answerOf(ctx) : null;
  if (!answer) {
    if (stores) ctx.state.log.warn('streamed response on an idempotent route: key not stored');
    await release();
    return;
  }
  try {
    const stored = await completeIdempotencyKey(db, id, claim.lock, answer);
    if (!stored) ctx.state.log.warn('idempotency key was taken over before this request completed');
  } catch (err) {
    // The route's work is done and committed: the merchant gets its answer. The key stays
    // in_progress until its lock passes; a retry then runs again, and the route's own unique
    // constraint (reference per merchant) is what stops a second payment.
    ctx.state.log.error({ err: { message: (err as Error).message } }, 'idempotency key could not be completed');
  }
}

/**
 * The route writes the key with its work (keyWrittenWith) and leaves the answer it stored in
 * ctx.state.idempotency.stored; if its statement found the key held, it throws
 * IdempotencyKeyHeld and this request gets that key's answer. An answer without work (a 422, a
 * 409 reference-conflict) is stored here, after the route, in one statement. A request the route
 * refuses (400) or fails (5xx) is answered by its key when the key is already taken.
 */
async function atomic(ctx: Context, next: Next, id: IdempotencyKeyId, request: IdempotentRequest): Promise<void> {
  const { db } = ctx.services;
  const key: AtomicIdempotency = { id, request };
  ctx.state.idempotency = key;
  let stores: boolean;
  try {
    stores = await runRoute(ctx, next);
  } catch (err) {
    if (err instanceof IdempotencyKeyHeld) return answerHeld(ctx, await readIdempotencyKey(db, id, request));
    // the key is looked at only now: a key already used wins over this request's 400 or 5xx
    // (same request: its stored answer; another: idempotency-conflict), as in spec order
    const held = await readIdempotencyKey(db, id, request).catch(() => null);
    if (held) return answerHeld(ctx, held);
    throw err;
  }
  if (key.stored) return send(ctx, key.stored);
  const answer = stores ? answerOf(ctx) : null;
  if (!answer) {
    if (stores) ctx.state.log.warn('streamed response on an idempotent route: key not stored');
    return;
  }
  if (!(await storeIdempotentResponse(db, id, request, answer))) answerHeld(ctx, await readIdempotencyKey(db, id, request));
}
