/**
 * npm run bench:webhooks: events to a fast local receiver through the real webhook-sender pool,
 * at its default concurrency.
 *
 *   drain   BENCH_EVENTS events (default 5000) are written first, then the sender starts: its
 *           deliveries per second from start to last receipt, with nothing else running
 *   burst   as many events written as fast as the producers can (transaction + outbox, as the
 *           flows write them) while the sender delivers: deliveries per second end to end, and
 *           the p50/p99 time from event row to receipt
 *   steady  BENCH_RATE events per second (default 200) for BENCH_DURATION seconds (default 5),
 *           one per transaction: the p50/p99 time from event row to receipt when not saturated
 *
 * "Event row" time is taken just before the transaction that writes it starts, so the figures
 * include the insert, commit and enqueue. The receiver runs in its own process (answers 200 at
 * once, verifies nothing) and timestamps each request on arrival; a delivery counts once.
 * BENCH_SENDERS (default 1) runs that many sender processes. BENCH_ENDPOINTS (default 1, at most 7) spreads the events over that many endpoints of one
 * merchant, each subscribed to its own event type. Uses a throwaway database cloned from the
 * migrated template on TEST_DATABASE_SERVER_URL's server, and REDIS_URL. The service's WEBHOOK_*,
 * OUTBOX_* and DB_* settings in the bench's environment reach the sender.
 */
import type { ChildProcess } from 'node:child_process';
import { loadConfig } from '../shared/config';
import { createContext, type ServiceContext } from '../shared/context';
import { transact } from '../shared/db/transact';
import { newId } from '../shared/ids';
import { EVENT_TYPES, type EventType } from '../shared/vocabulary';
import { emitEvent } from '../shared/webhooks/fanout';
import { createWebhook } from '../shared/webhooks/endpoints';
import { ask, forkRole, sleep, startProcess, stopRole, type RunningProcess } from './lib/processes';
import { seedMerchant, setUpStack } from './lib/stack';
import { percentile as pct, runBench, webhookReceiver } from './bench-common';

const EVENTS = Number(process.env.BENCH_EVENTS || 5000);
const RATE = Number(process.env.BENCH_RATE || 200);
const DURATION_S = Number(process.env.BENCH_DURATION || 5);
const ENDPOINTS = Math.min(7, Number(process.env.BENCH_ENDPOINTS || 1));
/** Copies of the webhook-sender process, as an operator scales `webhook-sender: N`. */
const SENDERS = Math.max(1, Number(process.env.BENCH_SENDERS || 1));
const PRODUCERS = 8;
const BATCH = 10;
/** the payment, refund and payout events: one endpoint subscribed to each */
const TYPES: EventType[] = EVENT_TYPES.slice(0, 7);

type Receipt = [eventId: string, atMs: number];

/** Child: the merchant's receiver. Reports what it got when asked. */
const receive = () => webhookReceiver<Receipt>(0, (event, _req, at) => [event.id, Math.floor(at)]);

async function writeEvents(
  ctx: ServiceContext,
  merchantId: string,
  count: number,
  started: Map<string, number>,
): Promise<void> {
  await transact(ctx, async (trx, outbox) => {
    const t0 = Date.now();
    for (let i = 0; i < count; i++) {
      const objectId = newId('payment');
      const type = TYPES[started.size % ENDPOINTS];
      const e = await emitEvent(trx, outbox, {
        merchantId,
        environment: 'test',
        type,
        objectId,
        objectVersion: 1,
        object: { id: objectId, object: 'payment', amount_charged: 1000 },
        at: ctx.clock.now(),
      });
      started.set(e.id, t0);
    }
  });
}

/** Collects receipts until every started event arrived; returns latencies (ms) and the last arrival. */
async function collect(receiver: ChildProcess, started: Map<string, number>, timeoutMs: number) {
  const seen = new Map<string, number>();
  let duplicates = 0;
  const deadline = Date.now() + timeoutMs;
  while (seen.size < started.size && Date.now() < deadline) {
    await sleep(100);
    const { receipts } = await ask<{ receipts: Receipt[] }>(receiver, { cmd: 'take' });
    for (const [id, at] of receipts) {
      if (!started.has(id)) continue;
      if (seen.has(id)) duplicates++;
      else seen.set(id, at);
    }
  }
  const latencies = [...seen].map(([id, at]) => at - started.get(id)!).sort((a, b) => a - b);
  return { latencies, expected: started.size, received: seen.size, duplicates, lastAt: Math.max(...seen.values()) };
}

async function burst(
  ctx: ServiceContext,
  merchantId: string,
  count: number,
  started: Map<string, number>,
): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (left > 0) {
        const n = Math.min(BATCH, left);
        left -= n;
        await writeEvents(ctx, merchantId, n, started);
      }
    }),
  );
}

function report(label: string, r: Awaited<ReturnType<typeof collect>>, extra: string) {
  const lost = r.expected - r.received;
  process.stdout.write(
    `${label.padEnd(7)} ${String(r.received).padStart(5)} deliveries; ${extra}` +
      `${lost ? `; ${lost} NOT RECEIVED` : ''}${r.duplicates ? `; ${r.duplicates} duplicates` : ''}\n`,
  );
}

const latency = (r: { latencies: number[] }) =>
  `event row to receipt p50 ${pct(r.latencies, 50)} ms, p99 ${pct(r.latencies, 99)} ms`;

async function main(): Promise<void> {
  const stack = await setUpStack({
    env: (databaseUrl, prefix) => ({
      // the service's settings given to the bench (WEBHOOK_ENDPOINT_CONCURRENCY=32 npm run bench:webhooks) reach the sender too
      ...Object.fromEntries(
        Object.entries(process.env).filter(([k]) => /^(WEBHOOK|OUTBOX|DB)_/.test(k)) as [string, string][],
      ),
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'warn',
    }),
  });
  const env = stack.env;
  // the sender inherits this environment too, so the figures printed are the ones it runs with
  const ctx = createContext({
    role: 'worker',
    name: 'bench',
    config: loadConfig({ ...process.env, ...env }),
    poolMax: PRODUCERS + 2,
  });
  stack.teardown.add(() => ctx.close());
  const senders: RunningProcess[] = [];
  try {
    const {
      child: receiver,
      ready: { port },
    } = await forkRole<{ port: number }>(__filename, '--receive');
    stack.teardown.add(() => stopRole(receiver));
    stack.teardown.add(() => Promise.all(senders.map((p) => p.stop())));
    const merchant = await seedMerchant(ctx, { name: 'Bench' });
    for (let i = 0; i < ENDPOINTS; i++) {
      await createWebhook(ctx.db, {
        merchant_id: merchant.id,
        url: `http://127.0.0.1:${port}/hook/${i}`,
        events: [TYPES[i]],
        environment: 'test',
      });
    }

    // drain: the backlog is written first, then the sender starts; its delivery rate alone
    const backlog = new Map<string, number>();
    await burst(ctx, merchant.id, EVENTS, backlog);
    for (let i = 0; i < SENDERS; i++)
      senders.push(startProcess('workers/webhook-sender/index.ts', { ...env, LOG_LEVEL: 'info' }));
    const lines = await Promise.all(senders.map((p) => p.waitForLine((l) => l?.msg === 'worker pool started')));
    const startedAt = Date.now();
    process.stdout.write(
      `${SENDERS} webhook-sender process(es) at concurrency ${lines[0].concurrency}, per-endpoint bound ${ctx.config.webhooks.endpointConcurrency}, ${ENDPOINTS} endpoint(s)\n`,
    );
    const d = await collect(receiver, backlog, 300_000);
    report(
      'drain',
      d,
      `${Math.round(d.received / ((d.lastAt - startedAt) / 1000))}/s from sender start to last receipt (backlog written before it started)`,
    );

    // burst: events written as fast as the producers can while the sender delivers them
    const b = new Map<string, number>();
    const producing = Date.now();
    await burst(ctx, merchant.id, EVENTS, b);
    const producedIn = (Date.now() - producing) / 1000;
    const r = await collect(receiver, b, 300_000);
    const seconds = (r.lastAt - producing) / 1000;
    report(
      'burst',
      r,
      `${Math.round(r.received / seconds)}/s from first event to last receipt (events written in ${producedIn.toFixed(2)} s); ${latency(r)}`,
    );

    // steady: a rate below saturation, one event per transaction
    const st = new Map<string, number>();
    const total = RATE * DURATION_S;
    const begin = Date.now();
    const writes: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = begin + (i * 1000) / RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      writes.push(writeEvents(ctx, merchant.id, 1, st));
    }
    await Promise.all(writes);
    const s = await collect(receiver, st, 120_000);
    report('steady', s, `${RATE} events/s for ${DURATION_S} s; ${latency(s)}`);
  } finally {
    await stack.tearDown();
  }
}

runBench({ '--receive': receive }, main);
