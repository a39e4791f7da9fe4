import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Middleware } from 'koa';
import { Forbidden } from '../../shared/errors';

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
 * Step 4 (spec 5.6.4): the client address is ctx.ip: the socket's, or X-Forwarded-For's as
 * seen through TRUSTED_PROXIES proxies when the operator configured them (api/app.ts sets Koa's
 * `proxy` and `maxIpsCount`); never a forged header otherwise.
 */
export const ipAllowlist: Middleware = async (ctx, next) => {
  if (!ipAllowed(ctx.state.auth!.ipAllowlist, ctx.ip)) throw new Forbidden('ip-not-allowed', 'The client address is not allowed for this API key');
  return next();
};
