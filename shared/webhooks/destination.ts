import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Environment } from '../db/models';
import { addressProblem } from './addresses';

/**
 * Where a webhook may be sent (docs/decisions.md#webhooks): live endpoints must be https and must not reach
 * loopback, private, link-local or metadata addresses; test endpoints may use http and loopback but
 * no other internal address (a test key must not make the sender a probe of the service's own
 * network). Judged after DNS resolution, at registration and on every connection.
 */

export class DestinationRefused extends Error {
  override name = 'DestinationRefused';
}

/** Resolves a host name to every address it has (injectable so unit tests do no I/O). */
export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addrs) =>
      err ? reject(err) : resolve(addrs.map((a) => a.address)),
    ),
  );

/** Why `ip` may not be reached by an endpoint of `env`, or null. */
function refusal(ip: string, env: Environment): string | null {
  const why = addressProblem(ip);
  return env === 'test' && why === 'loopback' ? null : why;
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** Why the URL text can never be an endpoint of this environment (no I/O), or null. */
export function urlProblem(raw: string, env: Environment): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https (or http for test endpoints)';
  if (env === 'live' && url.protocol !== 'https:') return 'must use https for live endpoints';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not carry a fragment';
  const host = hostOf(url);
  if (isIP(host)) {
    const why = refusal(host, env);
    if (why) return `must not point to a ${why} address`;
  }
  return null;
}

/** Why the host must be refused for an endpoint of `env` (any of its addresses refused), or null. */
function addressesProblem(addresses: string[], env: Environment): string | null {
  if (addresses.length === 0) return 'does not resolve';
  for (const a of addresses) {
    const why = refusal(a, env);
    if (why) return `resolves to a ${why} address`;
  }
  return null;
}

/** Registration check: the text, then every address the host resolves to. */
export async function destinationProblem(
  raw: string,
  env: Environment,
  resolve: Resolver = systemResolver,
): Promise<string | null> {
  const textual = urlProblem(raw, env);
  if (textual) return textual;
  const host = hostOf(new URL(raw));
  if (isIP(host)) return null;
  // a name that fails to resolve is refused as one that resolves to nothing
  const addresses = await resolve(host).catch((): string[] => []);
  return addressesProblem(addresses, env);
}

/**
 * A `lookup` for the sender's connections: the addresses are checked in the very lookup the socket
 * connects with, so a DNS answer that changes between check and connect (rebinding) slips nothing in.
 */
export function checkedLookup(env: Environment, resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const why = addressesProblem(addresses, env);
        if (why) return callback(new DestinationRefused(`destination ${why}`), '', 0);
        if (options.all) {
          const all: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
          return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, all);
        }
        callback(null, addresses[0], isIP(addresses[0]));
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
