import type { Clock } from '../../clock';
import type { Logger } from '../../logger';
import { HttpClient } from '../../httpClient';
import type { CallbackWire } from './protocol';
import { signCallback } from '../signature';

/** Delays before attempts 2, 3, …; after the last one the sandbox gives up. */
const RETRY_MS = [1000, 2000, 4000, 8000, 16000];

/**
 * How the sandboxes call `POST /callbacks/{provider}`: signed as a real provider would, retried
 * unless refused for good (a 4xx other than 408/429 will not change by asking again). `close`
 * clears the timers of `later`, so a stopped sandbox leaves nothing behind.
 */
export function createCallbackSender(callbackSecret: string, log: Logger, clock: Clock) {
  // a provider calling back hundreds of times a second keeps as many connections open: with 64,
  // callbacks waited in the sandbox for a free one once the web answered in over 300 ms at
  // 200/s, timed out and were sent again (bench:e2e)
  const client = new HttpClient(256);
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  /** Sends `body` to `url`; `onAttempt` and `onDelivered` feed the sandbox's own counters. */
  async function send(
    url: string,
    body: CallbackWire,
    hooks: { onAttempt?: () => void; onDelivered: () => void },
    attempt = 0,
  ): Promise<void> {
    const raw = JSON.stringify(body);
    hooks.onAttempt?.();
    const headers = {
      'Content-Type': 'application/json',
      'X-Provider-Signature': signCallback(callbackSecret, raw, Math.floor(clock.now() / 1000)),
    };
    // a network failure counts as 0, retried below; redirects are not followed (3xx is a failure)
    const status = await client.request(url, { method: 'POST', headers, body: raw, timeoutMs: 10_000 }).then(
      (r) => r.status,
      () => 0,
    );
    if (status >= 200 && status < 300) return hooks.onDelivered();
    log.warn({ externalId: body.external_id, status, attempt }, 'sandbox callback not accepted');
    const final = status >= 400 && status < 500 && status !== 408 && status !== 429;
    if (!final && attempt < RETRY_MS.length) later(RETRY_MS[attempt], () => void send(url, body, hooks, attempt + 1));
  }

  return {
    send,
    later,
    close() {
      timers.forEach(clearTimeout);
      client.close();
    },
  };
}
