import type { ChildProcess } from 'node:child_process';
import type { Db } from '../shared/db/knex';
import { issueCredential } from '../shared/merchants/service';
import { bareKoaApp, portOf, signedPayment, webhookReceiver, type LoadRequest } from './bench-common';
import { ask } from './lib/processes';

/**
 * bench:e2e's load (described in bench-e2e.ts's header): the signed payments, spread round-robin
 * over enough API keys to stay under the rate limit, the shape of the warm-up and of the overload
 * step and its recovery; the merchant's webhook receiver and the bare Koa app, each a child
 * process of the bench. The open loop that sends them is bench-common.ts's.
 */

/** A fresh stack's warm-up (see the header): 3,000 payments, at a rate every sitting seen sustains. */
export const WARMUP = { rate: 100, seconds: 30 };
const PER_KEY_PER_MINUTE = 60; // under the spec's 100, with room for a step that runs late
/** the bare-Koa baseline's closed loop (bench:payments' default) */
export const BARE_CONNECTIONS = 32;
/** the overload step: a request unanswered this long is a timeout */
export const OVERLOAD_TIMEOUT_MS = 10_000;
/** the overload step's recovery: this rate for this long, right after it */
export const RECOVERY_RATE = 20;
export const RECOVERY_S = 15;

// ---------------------------------------------------------------------------------------------
// the receiver (child process): records each payment.succeeded delivery, answers 200 at once

export type Receipt = [paymentId: string, deliveryId: string, atMs: number];

export function receiver(): void {
  webhookReceiver<Receipt>(Number(process.env.RECEIVER_PORT), (event, req, at) =>
    event.type === 'payment.succeeded'
      ? [event.data.object.id, String(req.headers['x-service-delivery-id']), at]
      : undefined,
  );
}

/** The receipts the receiver kept since the last call. */
export const takeReceipts = async (child: ChildProcess) =>
  (await ask<{ receipts: Receipt[] }>(child, { cmd: 'take' })).receipts;

/** The bare-Koa baseline's app (child process): tells its port, stops when told or when the bench is gone. */
export function bare(): void {
  const server = bareKoaApp().listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () =>
    process.send!({ port: portOf(server) }),
  );
  process.on('message', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
}

// ---------------------------------------------------------------------------------------------
// the payments

export interface Key {
  apiKey: string;
  secret: string;
}

/** Enough keys of the merchant for `rate` a second, each under PER_KEY_PER_MINUTE. */
export async function issueKeys(
  db: Db,
  merchantId: string,
  secretsKeys: Parameters<typeof issueCredential>[3],
  rate: number,
): Promise<Key[]> {
  const out: Key[] = [];
  for (let i = 0; i < Math.ceil((rate * 60) / PER_KEY_PER_MINUTE); i++) {
    const c = await issueCredential(db, merchantId, { environment: 'test', scope: 'payments' }, secretsKeys);
    out.push({ apiKey: c.api_key, secret: c.secret });
  }
  return out;
}

/** A signed payment, round-robin over the keys of a pool. */
export function signer(pool: Key[]): () => LoadRequest {
  let k = 0;
  return () => signedPayment(pool[k++ % pool.length], 'e2e');
}
