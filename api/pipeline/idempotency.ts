import { createHash } from 'node:crypto';
import { Stream } from 'node:stream';
import type { Context, Middleware } from 'koa';
import { UUID_V4_RE } from '../../shared/domain/ids';
import { ApiError, badRequest, conflict } from '../../shared/errors';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  type IdempotencyKeyId,
} from '../../shared/idempotency';
import { sendError } from '../middleware/errors';
import { canonicalPath, isIdempotentRoute } from './request';

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

function replay(ctx: Context, r: { status: number; headers: Record<string, string>; body: Buffer }): void {
  ctx.body = r.body;
  ctx.status = r.status;
  ctx.remove('Content-Type');
  ctx.set(r.headers);
  ctx.set('Idempotent-Replayed', 'true');
}

/**
 * Step 9 (spec 5.4, 5.6.9): on POST /v1/payments and POST /v1/payouts, an Idempotency-Key (UUID
 * v4) is required (400 idempotency-key-required / -invalid) and held in Postgres per merchant,
 * environment and key for 24 hours. Same key, same request: the stored response byte for byte
 * with `Idempotent-Replayed: true`; same key, other request: 409 idempotency-conflict; same key
 * while the first is running: 409 idempotency-in-progress, Retry-After: 1. Wraps whatever route
 * runs after it.
 */
export const idempotency: Middleware = async (ctx, next) => {
  if (!isIdempotentRoute(ctx.method, ctx.path)) return next();
  const presented = ctx.get('Idempotency-Key');
  if (!presented) throw badRequest('idempotency-key-required', 'The Idempotency-Key header is required');
  if (!UUID_V4_RE.test(presented)) throw badRequest('idempotency-key-invalid', 'The Idempotency-Key must be a UUID v4');

  const { db } = ctx.services;
  const auth = ctx.state.auth!;
  const id: IdempotencyKeyId = { merchantId: auth.merchantId, environment: auth.environment, key: presented.toLowerCase() };
  const hash = requestHash(ctx.method, ctx.path, ctx.state.rawBody ?? Buffer.alloc(0));
  const claim = await claimIdempotencyKey(db, id, { method: ctx.method, path: canonicalPath(ctx.path), hash });
  if (claim.kind === 'conflict') {
    throw conflict('idempotency-conflict', 'This Idempotency-Key was already used with a different request');
  }
  if (claim.kind === 'in-progress') {
    throw conflict('idempotency-in-progress', 'A request with this Idempotency-Key is still being processed', { 'Retry-After': '1' });
  }
  if (claim.kind === 'replay') return replay(ctx, claim.response);

  const release = () =>
    releaseIdempotencyKey(db, id, claim.lock).catch((err) =>
      ctx.state.log.error({ err: { message: (err as Error).message } }, 'idempotency key release failed'),
    );
  try {
    await next();
  } catch (err) {
    if (!(err instanceof ApiError) || releasesKey(err.status)) {
      await release();
      throw err;
    }
    sendError(ctx, err); // rendered here, by the one renderer, so the stored bytes are the sent bytes
  }
  const bytes = bodyBytes(ctx.body);
  if (releasesKey(ctx.status) || bytes === null) {
    if (bytes === null) ctx.state.log.warn('streamed response on an idempotent route: key not stored');
    await release();
    return;
  }
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
  try {
    const stored = await completeIdempotencyKey(db, id, claim.lock, { status: ctx.status, headers, body: bytes });
    if (!stored) ctx.state.log.warn('idempotency key was taken over before this request completed');
  } catch (err) {
    // The route's work is done and committed: the merchant gets its answer. The key stays
    // in_progress until its lock passes; a retry then runs again, and the route's own unique
    // constraint (reference per merchant) is what stops a second payment.
    ctx.state.log.error({ err: { message: (err as Error).message } }, 'idempotency key could not be completed');
  }
};
