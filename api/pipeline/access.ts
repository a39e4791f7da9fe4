import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Middleware } from 'koa';
import type { Scope } from '../../shared/db/models';
import { Forbidden } from '../../shared/errors';
import { canonicalPath } from './request';

const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** `::ffff:10.0.0.1` (an IPv4 client on a dual-stack socket) is 10.0.0.1. */
export function normaliseIp(ip: string): string {
  const m = MAPPED_V4.exec(ip);
  return m ? m[1] : ip;
}

function blockListOf(allowlist: string[]): BlockList {
  const list = new BlockList();
  for (const raw of allowlist) {
    const ip = normaliseIp(raw);
    if (isIPv4(ip)) list.addAddress(ip, 'ipv4');
    else if (isIPv6(ip)) list.addAddress(ip, 'ipv6');
  }
  return list;
}

/** True when the key has no allowlist, or the client address is on it (IPv6 compared as addresses, not text). */
export function ipAllowed(allowlist: string[] | null, clientIp: string): boolean {
  if (!allowlist || allowlist.length === 0) return true;
  const ip = normaliseIp(clientIp);
  const family = isIPv4(ip) ? 'ipv4' : isIPv6(ip) ? 'ipv6' : null;
  return family !== null && blockListOf(allowlist).check(ip, family);
}

/**
 * Step 4 of the pipeline (docs/decisions.md#merchant-pipeline): the client address is ctx.ip: the socket's, or X-Forwarded-For's as
 * seen through TRUSTED_PROXIES proxies when the operator configured them (api/app.ts sets Koa's
 * `proxy` and `maxIpsCount`); never a forged header otherwise.
 */
export const ipAllowlist: Middleware = async (ctx, next) => {
  if (!ipAllowed(ctx.state.auth!.ipAllowlist, ctx.ip))
    throw new Forbidden('ip-not-allowed', 'The client address is not allowed for this API key');
  return next();
};

/** Step 5 of the pipeline (docs/decisions.md#merchant-pipeline): the merchant must be active (status seen within CREDENTIAL_CACHE_MS). */
export const merchantStatus: Middleware = async (ctx, next) => {
  if (ctx.state.auth!.merchantStatus !== 'active')
    throw new Forbidden('merchant-suspended', 'The merchant account is suspended');
  return next();
};

/**
 * The scopes of docs/decisions.md#merchant-pipeline as a pure function. read: GET (and HEAD) only; payments: read plus POST /v1/payments
 * (creation; a refund needs full) and the payment links' POSTs (creation, deactivation:
 * docs/decisions.md#payment-links); full: everything. Paths are compared as the router matches
 * them (canonicalPath).
 */
export function scopeAllows(scope: Scope, method: string, path: string): boolean {
  if (scope === 'full') return true;
  if (method === 'GET' || method === 'HEAD') return true;
  return scope === 'payments' && method === 'POST' && PAYMENTS_SCOPE_POSTS.test(canonicalPath(path));
}

/** The POSTs a `payments` key may send. */
const PAYMENTS_SCOPE_POSTS = /^\/v1\/(payments|payment_links|payment_links\/[^/]+\/deactivate)$/;

/**
 * Scope check, after the signature and before content type, JSON and idempotency: a key is
 * refused what its scope does not allow only once the request is known to be genuinely its own,
 * and a refused request never parses a body or reserves an idempotency key.
 */
export const scope: Middleware = async (ctx, next) => {
  if (!scopeAllows(ctx.state.auth!.scope, ctx.method, ctx.path))
    throw new Forbidden('insufficient-scope', "This API key's scope does not allow this request");
  return next();
};
