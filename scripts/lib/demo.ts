import { PaymentsApi } from '../../shared/client/index';
import { answers200, sleep } from './processes';

/**
 * The client's side of the demos, link:create and the drills: the operator API that sets a
 * merchant up, the merchant SDK (shared/client) on its credential, and following an operation
 * until its status is final.
 */

export type OperatorApi = (method: string, route: string, body?: unknown) => Promise<any>;

/** Calls to the operator API at `baseUrl`: a 5xx or no answer is asked again, once a second, about 20 times. */
export function operatorApi(baseUrl: string, token: string): OperatorApi {
  return async (method, route, body) => {
    for (let i = 0; ; i++) {
      try {
        const res = await fetch(`${baseUrl}${route}`, {
          method,
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = await res.json().catch(() => undefined);
        if (res.status < 300) return json;
        if (res.status < 500 || i > 20) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
      } catch (err) {
        if (i > 20) throw err;
      }
      await sleep(1000);
    }
  };
}

/** Throws unless the service answers at `baseUrl` (its `health` route): `npm start` is not running. */
export async function requireService(baseUrl: string, health = '/health/ready'): Promise<void> {
  if (!(await answers200(`${baseUrl}${health}`)))
    throw new Error(`the service does not answer at ${baseUrl}: start it with \`npm start\` first`);
}

export interface Credential {
  id: string;
  api_key: string;
  secret: string;
  webhook_secret: string;
}

/** A merchant made through the operator API, with one credential (`environment`, `scope`). */
export async function createMerchantWithKey(
  admin: OperatorApi,
  merchant: { name: string; fees?: Record<string, { percent_bps: number; fixed: number }> },
  credential: { environment: 'test' | 'live'; scope: 'read' | 'payments' | 'full' },
): Promise<{ id: string; credential: Credential }> {
  const m = await admin('POST', '/admin/merchants', merchant);
  return { id: m.id, credential: await admin('POST', `/admin/merchants/${m.id}/credentials`, credential) };
}

/** The merchant SDK on a credential. */
export const merchantSdk = (baseUrl: string, c: { api_key: string; secret: string }) =>
  new PaymentsApi({ baseUrl, apiKey: c.api_key, secret: c.secret });

/** Statuses after which an operation does not change (refunded: a payment refunded in full). */
export const FINAL = new Set(['succeeded', 'failed', 'cancelled', 'refunded']);

/**
 * Reads an operation every `everyMs` until its status is final; `onRead(op, last)` is called
 * with each read and the one before it (to print what changed). Past `timeoutMs` it throws
 * `timeoutMessage(last)`. Returns the final object.
 */
export async function follow<T extends { status: string }>(
  read: () => Promise<T>,
  o: {
    everyMs: number;
    timeoutMs?: number;
    timeoutMessage?: (last: T | undefined) => string;
    first?: T;
    onRead: (op: T, last: T | undefined) => void;
  },
): Promise<T> {
  const started = Date.now();
  let last = o.first;
  while (!last || !FINAL.has(last.status)) {
    if (Date.now() - started > (o.timeoutMs ?? Infinity))
      throw new Error(o.timeoutMessage?.(last) ?? `not final within ${o.timeoutMs! / 1000} s`);
    await sleep(o.everyMs);
    const op = await read();
    o.onRead(op, last);
    last = op;
  }
  return last;
}
